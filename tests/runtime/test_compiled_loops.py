"""Compiled loops (ARCHITECTURE §7, runtime/loops.py): on jax, a loop whose iterations run
pure Tempo ops runs as one jax.lax.scan per run of iterations with constant conditions.
Results must equal a NumPy/torch reference and the same program with the flag off; loops
that do not qualify run as before and say why."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from programs import all_passes, run_once  # noqa: E402

from tempo.api import RecurrentTensor as RT  # noqa: E402
from tempo.core.configs import ExecutionConfig  # noqa: E402
from tempo.core.dtype import dtypes  # noqa: E402
from tempo.runtime import loops_jax  # noqa: E402

RNG = np.random.default_rng(7)
T_ = 12
XS = RNG.standard_normal((T_, 3)).astype(np.float32)
W = (RNG.standard_normal((3, 3)) * 0.5).astype(np.float32)


def _cfg(tmp_path: Any, backend: str = "jax", **kw: Any) -> ExecutionConfig:
    base = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend, dev="cpu",
                               path=str(tmp_path) + "/")
    return dataclasses.replace(all_passes(base), **kw)


def _x(t: Any, xs: np.ndarray = XS) -> RT:
    """x[t] from a constant: a Tempo op, so a loop reading it can still compile."""
    return RT.const(xs).index_select(0, RT.from_symbol(t))


def _both(tmp_path: Any, build: Any, bounds: dict[int, int], num_dims: int = 1,
          backend: str = "jax") -> tuple[dict, dict, Any]:
    """(results with compiled loops, results without, the compiled run's executor)."""
    on, exe = run_once(_cfg(tmp_path, backend, enable_compiled_loops=True), num_dims, build,
                       bounds)
    off, _ = run_once(_cfg(tmp_path, backend, enable_compiled_loops=False), num_dims, build,
                      bounds)
    return on, off, exe


def _scanned(exe: Any) -> list[tuple[int, int]]:
    return [s for rep in exe.compiled_loops() for s in rep.scanned()]


def _close(a: torch.Tensor, b: Any, tol: float = 1e-5) -> None:
    torch.testing.assert_close(a, torch.as_tensor(np.asarray(b)), rtol=tol, atol=tol)


def rnn_and_returns(tT: Any) -> dict[str, RT]:
    """An RNN forward (h[t+1] from h[t]), a discounted return backwards in time (g[t+1])
    and a recurrence over two earlier points (f[t-1], f[t-2])."""
    t, T = tT
    x = _x(t)
    h = RT.placeholder((3,), dtypes.float32, domain=(t,))
    h[0] = RT.zeros((3,))
    h[t + 1] = (RT.const(W) @ h + x).tanh()
    g = RT.placeholder((3,), dtypes.float32, domain=(t,))
    g[T - 1] = x[T - 1]
    g[True] = x + 0.9 * g[t + 1]
    f = RT.placeholder((3,), dtypes.float32, domain=(t,))
    f[0] = x[0]
    f[1] = x[1]
    f[True] = f[t - 1] * 0.5 + f[t - 2] * 0.25 + x
    return {"h": h, "g": g, "f": f}


def test_recurrences_scan_and_equal_numpy_and_the_python_loop(tmp_path: Any) -> None:
    on, off, exe = _both(tmp_path, rnn_and_returns, {0: T_})
    h, g, f = [np.zeros(3, np.float32)], [XS[-1]], [XS[0], XS[1]]
    for k in range(T_ - 1):
        h.append(np.tanh(W @ h[-1] + XS[k]))
    for k in range(T_ - 2, -1, -1):
        g.insert(0, XS[k] + 0.9 * g[0])
    for k in range(2, T_):
        f.append(f[-1] * 0.5 + f[-2] * 0.25 + XS[k])
    for name, want in (("h", h), ("g", g), ("f", f)):
        _close(on[name], np.stack(want))
        _close(on[name], off[name].numpy(), 1e-6)
    # the middle runs of both loops are scans: the forward loop from 2 (before, h[0] and
    # the f[0], f[1] branches), the backward one from T-2 down to 0
    assert (2, T_ - 1) in _scanned(exe) and (T_ - 2, 0) in _scanned(exe)


def gae(rs: np.ndarray, vs: np.ndarray, ds: np.ndarray, gamma: float, lam: float) -> Any:
    def build(tT: Any) -> dict[str, RT]:
        t, T = tT
        r, d = _x(t, rs), _x(t, ds)
        v, v1 = _x(t, vs), RT.const(vs).index_select(0, RT.from_symbol(t) + 1)
        delta = r + gamma * v1 * (1.0 - d) - v
        adv = RT.placeholder(rs.shape[1:], dtypes.float32, domain=(t,))
        adv[T - 1] = delta
        adv[True] = delta + gamma * lam * (1.0 - d) * adv[t + 1]
        return {"adv": adv, "ret": adv + v}

    return build


def gae_numpy(rs: np.ndarray, vs: np.ndarray, ds: np.ndarray, gamma: float,
              lam: float) -> np.ndarray:
    adv, last = np.zeros_like(rs), np.zeros_like(rs[0])
    for k in reversed(range(len(rs))):
        delta = rs[k] + gamma * vs[k + 1] * (1.0 - ds[k]) - vs[k]
        last = delta + gamma * lam * (1.0 - ds[k]) * last
        adv[k] = last
    return adv


def test_gae_is_one_scan_and_equals_numpy(tmp_path: Any) -> None:
    n, envs = 20, 5
    rs = RNG.standard_normal((n, envs)).astype(np.float32)
    vs = RNG.standard_normal((n + 1, envs)).astype(np.float32)
    ds = (RNG.random((n, envs)) < 0.2).astype(np.float32)
    on, off, exe = _both(tmp_path, gae(rs, vs, ds, 0.99, 0.95), {0: n})
    want = gae_numpy(rs, vs, ds, 0.99, 0.95)
    _close(on["adv"], want)
    _close(on["ret"], want + vs[:-1])
    _close(on["adv"], off["adv"].numpy(), 1e-6)
    assert (n - 2, 0) in _scanned(exe)


def _kernel_calls(tmp_path: Any, build: Any, n: int, on: bool) -> int:
    """Kernel and scan calls of one run at T=n."""
    _, exe = run_once(_cfg(tmp_path, enable_compiled_loops=on), 1, build, {0: n})
    return count_calls(exe)


def count_calls(exe: Any) -> int:
    """Calls from the generated code into kernels and compiled loops (scans `_L`, nests
    `_N`) in one more run of `exe`."""
    ns = exe.generated.fn.__globals__
    count = [0]

    def counted(fn: Any) -> Any:
        def call(*args: Any) -> Any:
            count[0] += 1
            return fn(*args)
        return call

    for name in [k for k in ns if re.fullmatch(r"k\d+|_L\d+|_N\d+", k)]:
        ns[name] = counted(ns[name])
    exe.execute()
    return count[0]


def test_calls_per_run_do_not_grow_with_t(tmp_path: Any) -> None:
    def build(tT: Any) -> dict[str, RT]:
        t, _ = tT
        h = RT.placeholder((3,), dtypes.float32, domain=(t,))
        h[0] = RT.zeros((3,))
        h[t + 1] = (RT.const(W) @ h + RT.from_symbol(t).cast(dtypes.float32)).tanh()
        return {"h": h}

    on = [_kernel_calls(tmp_path, build, n, True) for n in (16, 64)]
    off = [_kernel_calls(tmp_path, build, n, False) for n in (16, 64)]
    assert on[0] == on[1] and off[1] - off[0] >= 48


def test_a_loop_calling_python_stays_a_loop_and_says_why(tmp_path: Any) -> None:
    def build(tT: Any) -> dict[str, RT]:
        t, _ = tT
        x = RT.source_with_ts_udf(lambda ts: XS[ts[t]], (3,), dtypes.float32, domain=(t,))
        h = RT.placeholder((3,), dtypes.float32, domain=(t,))
        h[0] = x
        h[True] = (h[t - 1] + x).tanh()
        return {"h": h}

    on, off, exe = _both(tmp_path, build, {0: T_})
    _close(on["h"], off["h"].numpy(), 0.0)
    assert not _scanned(exe)
    assert any("udf_source" in why for rep in exe.compiled_loops()
               for _, _, _, why in rep.segments)


def test_a_step_jax_cannot_trace_runs_as_the_python_loop(tmp_path: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any) -> Any:
        raise TypeError("not traceable")

    init = loops_jax.ScanRunner.__init__

    def patched(self: Any, *args: Any) -> None:
        init(self, *args)
        self.fn = broken

    monkeypatch.setattr(loops_jax.ScanRunner, "__init__", patched)
    on, off, exe = _both(tmp_path, rnn_and_returns, {0: T_})
    for name in on:
        _close(on[name], off[name].numpy(), 0.0)
    runners = [r for rep in exe.compiled_loops() for _, _, r, _ in rep.segments if r]
    assert runners and all(r.failed == "TypeError: not traceable" for r in runners)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_other_backends_run_python_loops_either_way(tmp_path: Any, backend: str) -> None:
    on, off, exe = _both(tmp_path, rnn_and_returns, {0: T_}, backend=backend)
    assert exe.compiled_loops() == []
    for name in on:
        _close(on[name], off[name].numpy(), 0.0)


B_, OBS = 4, 3
W1 = (RNG.standard_normal((OBS, 8)) * 0.5).astype(np.float32)
W2 = (RNG.standard_normal((8, OBS)) * 0.5).astype(np.float32)
S0 = RNG.uniform(-0.5, 0.5, (B_, OBS)).astype(np.float32)


def acting(tT: Any) -> dict[str, RT]:
    """An acting loop with an environment written in Tempo ops: a tanh policy plus
    exploration noise (a random draw per step), the state moved by the clipped action,
    reward -|s'|: a recurrence through policy and environment."""
    t, _ = tT
    s = RT.placeholder((B_, OBS), dtypes.float32, domain=(t,))
    s[0] = RT.const(S0)
    noise = RT.random((B_, OBS), dtypes.float32, domain=(t,))
    a = (s @ RT.const(W1)).tanh() @ RT.const(W2) + (noise - 0.5) * 0.2
    nxt = (s + a.clip(-1.0, 1.0) * 0.05).clip(-1.0, 1.0)
    s[t + 1] = nxt
    return {"s": s, "noise": noise, "r": -nxt.abs().sum(1)}


def test_an_acting_loop_with_an_env_in_tempo_ops_scans(tmp_path: Any) -> None:
    on, off, exe = _both(tmp_path, acting, {0: T_})
    for name in on:  # the same draws: the key chain is carried through the scan
        _close(on[name], off[name].numpy(), 1e-6)
    noise, s, rs = on["noise"].numpy(), [S0], []
    for k in range(T_):
        a = np.tanh(s[-1] @ W1) @ W2 + (noise[k] - 0.5) * 0.2
        s.append(np.clip(s[-1] + np.clip(a, -1, 1) * 0.05, -1, 1))
        rs.append(-np.abs(s[-1]).sum(1))
    _close(on["s"], np.stack(s[:-1]))
    _close(on["r"], np.stack(rs))
    assert _scanned(exe)


def test_rnn_bptt_gradients_equal_with_and_without_compiled_loops(tmp_path: Any) -> None:
    n = 10
    xs = RNG.standard_normal((n, 3)).astype(np.float32)

    def build(tT: Any) -> dict[str, RT]:
        t, _ = tT
        w = RT.const(W, requires_grad=True)
        h = RT.placeholder((3,), dtypes.float32, domain=(t,))
        h[0] = _x(t, xs).tanh()
        h[True] = (h[t - 1] @ w + _x(t, xs)).tanh()
        (h * h).sum().backward()
        return {"h": h, "gw": w.grad}

    on, off, exe = _both(tmp_path, build, {0: n})
    wt = torch.from_numpy(W).requires_grad_()
    hs = [torch.tanh(torch.from_numpy(xs[0]))]
    for k in range(1, n):
        hs.append(torch.tanh(hs[-1] @ wt + torch.from_numpy(xs[k])))
    (torch.stack(hs) ** 2).sum().backward()
    _close(on["gw"], wt.grad.numpy(), 1e-4)
    _close(on["gw"], off["gw"].numpy(), 1e-5)
    _close(on["h"], torch.stack(hs).detach().numpy())
    # The backward recurrence (t from T-1 down) is one scan; the weight gradient's terms over
    # t are either a scanned loop or batched over t by vectorisation (no loop left).
    backward = [rep for rep in exe.compiled_loops() if rep.loop.endswith(", -1)")]
    assert backward and any(rep.scanned() for rep in backward)


def test_an_expression_of_an_unknown_name_is_rejected_every_time() -> None:
    """accept6b c04 (jax, vectorisation and fusion off; a window over (b, t) inside a loop
    over i): the loop analysis cached an expression of the outer counter `b` before
    rejecting it, so its second use evaluated it and raised NameError: name 'b' is not
    defined at compile, instead of leaving the loop to the plain Python emitter."""
    from types import SimpleNamespace

    from tempo.runtime.loops import LoopAnalysis, Reject

    an = LoopAnalysis.__new__(LoopAnalysis)
    an._codes, an.env, an.counters = {}, {"T": 4}, [0]
    an.loop = SimpleNamespace(counter="t", step=1)
    for _ in range(2):
        with pytest.raises(Reject, match="unknown before the run"):
            an.at("max(0, b - 1) + t", 1)
    assert an.at("min(t + 1, T - 1)", 3) == 3
