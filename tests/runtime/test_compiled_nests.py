"""Compiled loop nests (runtime/loops_nest.py): on jax, a static top-level loop whose body
holds inner loops runs as one jax.lax.scan whose step holds the inner scans. Results
(values and gradients through time) must equal a NumPy/torch eager reference and the same
program with compiled loops off, with and without a memory cap; a nest that cannot scan
runs as Python loops and says why."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from programs import all_passes, run_once  # noqa: E402
from test_compiled_loops import count_calls  # noqa: E402

from tempo.api import RecurrentTensor as RT  # noqa: E402
from tempo.core.configs import ExecutionConfig  # noqa: E402
from tempo.core.dtype import dtypes  # noqa: E402
from tempo.runtime import loops_jax  # noqa: E402

RNG = np.random.default_rng(11)
B_, T_ = 3, 6
W = (RNG.standard_normal((3, 3)) * 0.5).astype(np.float32)
XS = RNG.standard_normal((9, T_, 3)).astype(np.float32)  # rows for b < 9 (B is 3 or 9)


def _cfg(tmp_path: Any, **kw: Any) -> ExecutionConfig:
    """jax, every pass on but vectorisation (which would make `b` a batch dim: no nest)."""
    base = dataclasses.replace(ExecutionConfig.test_cfg(), backend="jax", dev="cpu",
                               path=str(tmp_path) + "/")
    return dataclasses.replace(all_passes(base), **{"enable_vectorization": False, **kw})


def _both(tmp_path: Any, build: Any, bounds: dict[int, int], **kw: Any
          ) -> tuple[dict, dict, Any]:
    """(results with compiled loops, results without, the compiled run's executor)."""
    on, exe = run_once(_cfg(tmp_path, enable_compiled_loops=True, **kw), 2, build, bounds)
    off, _ = run_once(_cfg(tmp_path, enable_compiled_loops=False, **kw), 2, build, bounds)
    return on, off, exe


def _nests(exe: Any) -> list[tuple[str, int, int, Any, str]]:
    """(loop, first counter, last counter, runner, why) of the segments of nests (loops
    whose segments the nest lowering reports)."""
    return [(rep.loop, a, b, r, why) for rep in exe.compiled_loops()
            for a, b, r, why in rep.segments if rep.loop.startswith(("for d0", "for c0"))]


def _scanned_nests(exe: Any) -> list[tuple[int, int]]:
    return [(a, b) for _, a, b, r, _ in _nests(exe) if r is not None and r.failed is None
            and r.calls > 0]


def _close(a: torch.Tensor, b: Any, tol: float = 1e-5) -> None:
    torch.testing.assert_close(a, torch.as_tensor(np.asarray(b)), rtol=tol, atol=tol)


def _x(b: Any, t: Any) -> RT:
    return RT.const(XS).index_select(0, RT.from_symbol(b)).index_select(0, RT.from_symbol(t))


def bt_rnn(bB: Any, tT: Any) -> dict[str, RT]:
    """A b×t recurrence: h[b, t+1] = tanh(W h[b, t] + x[b, t]), per b."""
    (b, _), (t, _) = bB, tT
    h = RT.placeholder((3,), dtypes.float32, domain=(b, t))
    h[b, 0] = RT.zeros((3,))
    h[b, t + 1] = (RT.const(W) @ h + _x(b, t)).tanh()
    return {"h": h}


def bt_numpy() -> np.ndarray:
    want = np.zeros((B_, T_, 3), np.float32)
    for bb in range(B_):
        h = np.zeros(3, np.float32)
        for tt in range(T_):
            want[bb, tt] = h
            h = np.tanh(W @ h + XS[bb, tt])
    return want


def test_a_b_by_t_recurrence_is_one_nested_scan(tmp_path: Any) -> None:
    on, off, exe = _both(tmp_path, bt_rnn, {0: B_, 1: T_})
    _close(on["h"], bt_numpy())
    _close(on["h"], off["h"].numpy(), 1e-6)
    assert _scanned_nests(exe) == [(0, B_ - 1)]


I_, K_, N_, D_, H_ = 4, 6, 16, 3, 8
MX = RNG.standard_normal((I_, N_, D_)).astype(np.float32)
MY = RNG.standard_normal((I_, N_)).astype(np.float32)
W10 = (RNG.standard_normal((D_, H_)) * 0.5).astype(np.float32)
W20 = (RNG.standard_normal((H_,)) * 0.5).astype(np.float32)
LR = 0.1


def mlp_steps(iI: Any, kK: Any) -> dict[str, RT]:
    """A 2-layer MLP trained by K plain gradient steps (the gradient written out in Tempo
    ops) on batch i, the weights carried from the last step of i-1 to i."""
    (i, _), (k, K) = iI, kK
    x = RT.const(MX).index_select(0, RT.from_symbol(i))
    y = RT.const(MY).index_select(0, RT.from_symbol(i))
    w1 = RT.placeholder((D_, H_), dtypes.float32, domain=(i, k))
    w2 = RT.placeholder((H_,), dtypes.float32, domain=(i, k))
    w1[0, 0] = RT.const(W10)
    w2[0, 0] = RT.const(W20)
    w1[i, 0] = w1[i - 1, K - 1]
    w2[i, 0] = w2[i - 1, K - 1]
    h = (x @ w1).tanh()
    d = (h @ w2 - y) * (2.0 / N_)
    w1[i, k + 1] = w1 - LR * (x.permute((1, 0)) @ ((d.reshape((N_, 1)) * w2) * (1.0 - h * h)))
    w2[i, k + 1] = w2 - LR * (h.permute((1, 0)) @ d)
    return {"w1": w1, "w2": w2, "loss": ((h @ w2 - y) ** 2).mean()}


def mlp_numpy() -> dict[str, np.ndarray]:
    w1s, w2s = np.zeros((I_, K_, D_, H_), np.float32), np.zeros((I_, K_, H_), np.float32)
    loss = np.zeros((I_, K_), np.float32)
    w1, w2 = W10, W20
    for i in range(I_):
        if i:
            w1, w2 = w1s[i - 1, K_ - 1], w2s[i - 1, K_ - 1]
        for k in range(K_):
            w1s[i, k], w2s[i, k] = w1, w2
            h = np.tanh(MX[i] @ w1)
            d = (h @ w2 - MY[i]) * (2.0 / N_)
            loss[i, k] = ((h @ w2 - MY[i]) ** 2).mean()
            w1 = w1 - LR * (MX[i].T @ ((d[:, None] * w2[None, :]) * (1 - h * h)))
            w2 = w2 - LR * (h.T @ d)
    return {"w1": w1s, "w2": w2s, "loss": loss}


@pytest.mark.parametrize("vectorize", [False, True])
def test_an_mlp_trained_k_steps_per_outer_iteration_scans_nested(
        tmp_path: Any, vectorize: bool) -> None:
    on, off, exe = _both(tmp_path, mlp_steps, {0: I_, 1: K_}, enable_vectorization=vectorize)
    want = mlp_numpy()
    for name, ref in want.items():
        _close(on[name], ref)
        _close(on[name], off[name].numpy(), 1e-6)
    # the first outer iteration takes the initial weights (another branch): Python
    assert _scanned_nests(exe) == [(1, I_ - 1)]


def test_gradients_through_a_nest_equal_torch(tmp_path: Any) -> None:
    def build(bB: Any, tT: Any) -> dict[str, RT]:
        (b, _), (t, _) = bB, tT
        w = RT.const(W, requires_grad=True)
        h = RT.placeholder((3,), dtypes.float32, domain=(b, t))
        h[b, 0] = _x(b, t).tanh()
        h[True] = (h[b, t - 1] @ w + _x(b, t)).tanh()
        (h * h).sum().backward()
        return {"h": h, "gw": w.grad}

    on, off, exe = _both(tmp_path, build, {0: B_, 1: T_})
    wt = torch.from_numpy(W).requires_grad_()
    hs = []
    for bb in range(B_):
        hh = [torch.tanh(torch.from_numpy(XS[bb, 0]))]
        for k in range(1, T_):
            hh.append(torch.tanh(hh[-1] @ wt + torch.from_numpy(XS[bb, k])))
        hs.append(torch.stack(hh))
    (torch.stack(hs) ** 2).sum().backward()
    _close(on["gw"], wt.grad.numpy(), 1e-4)
    _close(on["gw"], off["gw"].numpy(), 1e-5)
    _close(on["h"], torch.stack(hs).detach().numpy())
    assert len(_scanned_nests(exe)) == 2  # the forward nest and the backward one


def test_under_a_memory_cap_nests_run_and_agree(tmp_path: Any) -> None:
    on, off, _ = _both(tmp_path, bt_rnn, {0: B_, 1: T_}, device_memory_cap_bytes=1 << 30)
    _close(on["h"], bt_numpy())
    _close(on["h"], off["h"].numpy(), 1e-6)
    on, off, _ = _both(tmp_path, mlp_steps, {0: I_, 1: K_}, device_memory_cap_bytes=1 << 30)
    for name, ref in mlp_numpy().items():
        _close(on[name], ref)
        _close(on[name], off[name].numpy(), 1e-6)


def test_a_nest_calling_python_stays_python_and_says_why(tmp_path: Any) -> None:
    def build(bB: Any, tT: Any) -> dict[str, RT]:
        (b, _), (t, _) = bB, tT
        x = RT.source_with_ts_udf(lambda ts: XS[ts[b], ts[t]], (3,), dtypes.float32,
                                  domain=(b, t))
        h = RT.placeholder((3,), dtypes.float32, domain=(b, t))
        h[b, 0] = x
        h[True] = (h[b, t - 1] + x).tanh()
        return {"h": h}

    on, off, exe = _both(tmp_path, build, {0: B_, 1: T_})
    _close(on["h"], off["h"].numpy(), 0.0)
    assert not _scanned_nests(exe)


def _calls(tmp_path: Any, build: Any, bounds: dict[int, int], on: bool) -> int:
    """Calls from Python into kernels and compiled loops in one run."""
    _, exe = run_once(_cfg(tmp_path, enable_compiled_loops=on), 2, build, bounds)
    return count_calls(exe)


def test_python_calls_do_not_grow_with_the_outer_loop(tmp_path: Any) -> None:
    on = [_calls(tmp_path, bt_rnn, {0: b, 1: T_}, True) for b in (3, 9)]
    off = [_calls(tmp_path, bt_rnn, {0: b, 1: T_}, False) for b in (3, 9)]
    assert on[0] == on[1] and off[1] - off[0] >= 6 * T_


def test_a_step_jax_cannot_trace_runs_as_python_and_says_why(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any) -> Any:
        raise TypeError("not traceable")

    monkeypatch.setattr(loops_jax.NestRunner, "_scan", lambda self, k, g, loc: broken)
    on, off, exe = _both(tmp_path, bt_rnn, {0: B_, 1: T_})
    _close(on["h"], off["h"].numpy(), 0.0)
    fails = [r.failed for _, _, _, r, _ in _nests(exe) if r is not None]
    assert fails and all(f == "TypeError: not traceable" for f in fails)


def test_a_tracked_run_writes_scan_outputs_as_blocks_charged_as_points(tmp_path: Any) -> None:
    """Under a cap (the outer loop keeps its Python steps, the timeline samples each) the
    inner scans' stacked outputs go to their stores as one block per scan, charged as
    their live points (a row's bytes each): the same values; a second run charges the
    same as the first (its blocks replace the first run's)."""
    on, exe = run_once(_cfg(tmp_path, enable_compiled_loops=True,
                            device_memory_cap_bytes=1 << 30), 2, mlp_steps, {0: I_, 1: K_})
    for name, ref in mlp_numpy().items():
        _close(on[name], ref)
    blocks = [s for s in exe.stores.values() if isinstance(s, loops_jax.TrackedStackedStore)
              and s.blocks]
    assert blocks
    for s in blocks:
        point = exe.sdg.tensors[s.tid].dtype.repr_bytes * int(
            np.prod([int(d) for d in exe.sdg.tensors[s.tid].shape]))
        assert s.device_bytes() == len(s) * point  # every live point once, blocks too
    a = exe.accountant
    live = a.live
    assert live == sum(ref[0] for ref in a.held.values())
    exe.execute()
    assert a.live == live
    exe.reset()
    assert a.live == 0
