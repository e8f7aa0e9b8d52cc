"""Fusion (ARCHITECTURE §5.6): the grouping pass joins connected point-to-point ops of one
domain into regions, which the backends run as one call (jax.jit on jax). Results are
checked against eager torch and against the same program with fusion off."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch
from programs import all_passes, run_once

from tempo.api import RecurrentTensor as RT
from tempo.core.configs import TUNING, ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import UnsupportedError
from tempo.core.ops_region import RegionOp
from tempo.runtime import regions

T_ = 6
RNG = np.random.default_rng(3)
XS = RNG.standard_normal((T_, 4)).astype(np.float32)
W = (RNG.standard_normal((4, 4)) * 0.5).astype(np.float32)


def _cfg(backend: str, tmp_path: Any, **kw: Any) -> ExecutionConfig:
    base = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend, dev="cpu",
                               path=str(tmp_path) + "/")
    return dataclasses.replace(all_passes(base), **kw)


def _source(t: Any) -> RT:
    return RT.source_with_ts_udf(lambda ts: XS[ts[t]], (4,), dtypes.float32, domain=(t,))


def rnn_and_return(tT: Any) -> dict[str, RT]:
    """A tanh RNN (reads h[t-1]) and a discounted return (reads g[t+1]) over one t: the
    acting step sits on a cycle through a t-1 read in a program that also reads t+1."""
    t, T = tT
    x = _source(t)
    h = RT.placeholder((4,), dtypes.float32, domain=(t,))
    h[0] = x.tanh()
    h[True] = ((h[t - 1] @ RT.const(W) + x) * 0.5 + 0.1).tanh()
    r = (h * h).sum() - 1.0
    g = RT.placeholder((), dtypes.float32, domain=(t,))
    g[T - 1] = r
    g[True] = r + g[t + 1] * 0.9
    return {"h": h, "g": g, "out": (h * g + 1.0).exp()}


def rnn_and_return_eager() -> dict[str, torch.Tensor]:
    x, w = torch.from_numpy(XS), torch.from_numpy(W)
    hs = [torch.tanh(x[0])]
    for k in range(1, T_):
        hs.append(torch.tanh((hs[-1] @ w + x[k]) * 0.5 + 0.1))
    h = torch.stack(hs)
    r = (h * h).sum(1) - 1.0
    gs = [r[-1]]
    for k in range(T_ - 2, -1, -1):
        gs.insert(0, r[k] + gs[0] * 0.9)
    g = torch.stack(gs)
    return {"h": h, "g": g, "out": torch.exp(h * g[:, None] + 1.0)}


def _regions(exe: Any) -> list[RegionOp]:
    return [op for op in exe.sdg.ops.values() if isinstance(op, RegionOp)]


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_regions_agree_with_eager_torch_and_with_fusion_off(backend: str, tmp_path: Any) -> None:
    on, exe = run_once(_cfg(backend, tmp_path), 1, rnn_and_return, {0: T_})
    off, _ = run_once(_cfg(backend, tmp_path, enable_dataflow_grouping=False), 1,
                      rnn_and_return, {0: T_})
    want = rnn_and_return_eager()
    assert _regions(exe), "the RNN step and the elementwise tail must form regions"
    for name, w in want.items():
        torch.testing.assert_close(on[name], w, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(on[name], off[name], atol=1e-6, rtol=1e-6)


def test_the_recurrence_step_is_one_region(tmp_path: Any) -> None:
    """h[t] = tanh((h[t-1] @ W + x) * 0.5 + 0.1): the five ops after the read of h[t-1]
    run at one point and form one region, although g reads t+1 elsewhere (a per-read
    cycle test would have to assume the t-1 read can be undone)."""
    cfg = _cfg("torch", tmp_path, enable_vectorization=False)
    _, exe = run_once(cfg, 1, rnn_and_return, {0: T_})
    names = [sorted(m.describe() for m in r.body) for r in _regions(exe)]
    assert any({"matmul", "tanh"} <= set(n) and len(n) >= 5 for n in names), names


def test_no_region_waits_on_itself(tmp_path: Any) -> None:
    """y[t] = x * 2 feeds m = sum over all t, and z[t] = y + m: joining y and z would make
    the region need m, which needs the region at every t. They stay apart, results exact."""
    def build(tT: Any) -> dict[str, RT]:
        t, T = tT
        y = (_source(t) * 2.0).exp()
        m = y[0:T].sum(0)
        return {"z": (y + m).tanh()}

    cfg = _cfg("torch", tmp_path, enable_vectorization=False)
    got, exe = run_once(cfg, 1, build, {0: T_})
    y = torch.exp(torch.from_numpy(XS) * 2.0)
    torch.testing.assert_close(got["z"], torch.tanh(y + y.sum(0)), atol=1e-5, rtol=1e-5)
    for r in _regions(exe):
        kinds = {m.describe() for m in r.body}
        assert not ({"exp", "tanh"} <= kinds), kinds


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_where_read_by_a_recurrence_and_by_a_batched_op_fuses(backend: str,
                                                                tmp_path: Any) -> None:
    """The trivial env's step: `live = t < 4` picks the next state of a recurrence and the
    reward, which vectorisation batches after the loop. Joining the batched `live` with the
    batched rewards made a region the loop waits on through `live[t]` while it waits on
    the loop through `moved[0:T]` (a path that leaves t and comes back: the recurrence's
    t-1 read cannot break it). It failed with "unknown ops"; now it runs, exactly."""
    def build(tT: Any) -> dict[str, RT]:
        t, T = tT
        s = RT.placeholder((4,), dtypes.float32, domain=(t,))
        s[0] = RT.zeros((4,), dtypes.float32)
        moved = (s + _source(t) * 0.5).clip(-1.0, 1.0)
        live = RT.from_expr(t) < 4
        s[t + 1] = live.where(moved, s)
        reward = live.where(-moved.abs(), RT.zeros((4,), dtypes.float32))
        return {"total": reward[0:T].sum()}

    got, exe = run_once(_cfg(backend, tmp_path), 1, build, {0: T_})
    state, total = np.zeros(4, np.float32), np.float32(0.0)
    for k in range(T_):
        moved = np.clip(state + XS[k] * np.float32(0.5), -1.0, 1.0)
        if k < 4:
            state, total = moved, total + (-np.abs(moved)).sum()
    assert _regions(exe)
    np.testing.assert_allclose(np.asarray(got["total"]), total, rtol=1e-6)


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_the_next_state_where_joins_the_step_needed_everywhere(backend: str,
                                                              tmp_path: Any) -> None:
    """E5's env step: `moved` is needed at every t (the total reads all of it) while the
    `where` choosing the next state is demanded only where the recurrence reads it
    (t < T - 1). The where reads its inputs at its own point, so running it at t = T - 1
    too is safe: it joins the step's region (one call per step, not two), exactly."""
    def build(tT: Any) -> dict[str, RT]:
        t, T = tT
        s = RT.placeholder((4,), dtypes.float32, domain=(t,))
        s[0] = RT.zeros((4,), dtypes.float32)
        moved = (s * 0.9 + _source(t) * 0.5).clip(-1.0, 1.0)
        live = RT.from_expr(t) < 3
        s[t + 1] = live.where(moved, moved * 0.0 - 1.0)
        return {"total": (moved * moved)[0:T].sum()}

    got, exe = run_once(_cfg(backend, tmp_path), 1, build, {0: T_})
    state, total = np.zeros(4, np.float32), np.float32(0.0)
    for k in range(T_):
        moved = np.clip(state * np.float32(0.9) + XS[k] * np.float32(0.5), -1.0, 1.0)
        total += (moved * moved).sum()
        state = moved if k < 3 else moved * np.float32(0.0) - 1.0
    np.testing.assert_allclose(np.asarray(got["total"]), total, rtol=1e-5)
    bodies = [{m.describe() for m in r.body} for r in _regions(exe)
              if "d0" in [v.name for v in r.domain.variables]]
    assert any({"where", "maximum", "minimum"} <= b for b in bodies), bodies


def test_flags_switch_compilation_codegen_and_sizes(tmp_path: Any) -> None:
    want = rnn_and_return_eager()
    runs = {"plain": {}, "eager": {"enable_group_fusions": False},
            "fusion off": {"enable_fusion": False},
            "interpreted": {"enable_codegen_dataflows": False},
            "pairs": {"max_dataflow_group_size": 2}, "none": {"min_dataflow_group_size": 1000}}
    found = {}
    for name, kw in runs.items():
        got, exe = run_once(_cfg("jax", tmp_path, **kw), 1, rnn_and_return, {0: T_})
        for k, w in want.items():
            torch.testing.assert_close(got[k], w, atol=1e-5, rtol=1e-5)
        found[name] = _regions(exe)
    assert found["plain"] and all(r.compiled and r.generated for r in found["plain"])
    assert found["eager"] and not any(r.compiled for r in found["eager"])
    assert found["interpreted"] and not any(r.generated for r in found["interpreted"])
    assert found["pairs"] and all(len(r.body) == 2 for r in found["pairs"])
    assert not found["none"] and not found["fusion off"]


def test_equal_regions_share_one_compiled_body(tmp_path: Any) -> None:
    """Two copies of the same chain on different inputs: one cached body (jax.jit then
    compiles once per input shape), two regions."""
    def build(tT: Any) -> dict[str, RT]:
        t, _ = tT
        x1 = _source(t)
        x2 = RT.source_with_ts_udf(lambda ts: XS[ts[t]] * 2.0, (4,), dtypes.float32,
                                   domain=(t,))
        return {"a": ((x1 * 3.0).exp() + 1.0).log(), "b": ((x2 * 3.0).exp() + 1.0).log()}

    before = len(regions._CACHE)
    got, exe = run_once(_cfg("jax", tmp_path, enable_vectorization=False), 1, build, {0: T_})
    bodies = {regions.structure_key(r) for r in _regions(exe)}
    assert len(_regions(exe)) == 2 and len(bodies) == 1
    assert len(regions._CACHE) - before <= 1
    x = torch.from_numpy(XS)
    torch.testing.assert_close(got["b"], torch.log(torch.exp(x * 6.0) + 1.0),
                               atol=1e-5, rtol=1e-5)


def test_a_body_jax_cannot_trace_runs_eagerly() -> None:
    import jax.numpy as jnp

    from tempo.prims.region import _jit

    fn = _jit(lambda x: jnp.asarray(np.asarray(x) + 1.0))  # needs concrete values
    out, flags = fn(jnp.ones(3))  # (no index member: no out-of-range flags)
    np.testing.assert_array_equal(np.asarray(out), np.full(3, 2.0))
    assert flags is None


def test_torch_compilation_backend_takes_known_values(tmp_path: Any) -> None:
    from programs import Program, run_plain

    prog = Program(1, rnn_and_return, {0: T_})
    got, exe = run_plain(_cfg("torch", tmp_path, torch_compilation_backend="eager"), prog, {})
    assert _regions(exe) and not any(r.compiled for r in _regions(exe))
    with pytest.raises(UnsupportedError, match="torch_compilation_backend"):
        run_plain(_cfg("torch", tmp_path, torch_compilation_backend="inductor"), prog, {})


@pytest.mark.slow
def test_torch_compile_regions_agree(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every static region torch.compiled (threshold 0): the results of eager torch."""
    monkeypatch.setattr(TUNING, "torch_compile_min_elements", 0)
    monkeypatch.setattr(TUNING, "payback_s", 0.0)  # compiled from the second call on
    got, exe = run_once(_cfg("torch", tmp_path), 1, rnn_and_return, {0: T_})
    assert any(r.compiled for r in _regions(exe))
    for name, w in rnn_and_return_eager().items():
        torch.testing.assert_close(got[name], w, atol=1e-5, rtol=1e-5)


def test_torch_compile_waits_until_eager_calls_pay_for_it() -> None:
    """A region marked for torch.compile runs eagerly until its calls have taken
    `payback_s` seconds, then through the compiled function (here a counting stand-in)."""
    compiled: list[int] = []

    def compiler(fn: Any) -> Any:
        compiled.append(1)
        return lambda *a: ("compiled", fn(*a))

    slow = regions.after_payback(lambda x: x + 1, compiler, payback_s=3600.0)
    assert [slow(k) for k in range(5)] == [1, 2, 3, 4, 5] and not compiled
    fast = regions.after_payback(lambda x: x + 1, compiler, payback_s=0.0)
    assert fast(1) == 2 and compiled == [1]  # the paying call itself ran eagerly
    assert fast(2) == ("compiled", 3) and fast(3) == ("compiled", 4) and compiled == [1]


def test_a_region_torch_compile_fails_on_runs_eagerly_with_a_warning(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A body inductor cannot compile (its C++ codegen has failed on some graphs of this
    torch) runs eagerly, with the reason in a warning; an error of the computation itself
    still raises (the eager call raises it again)."""
    from torch._dynamo.exc import TorchDynamoException

    from tempo.prims.region import _torch_compile

    def failing_compile(fn: Any, **_: Any) -> Any:
        def run(*args: Any) -> Any:
            raise TorchDynamoException("error: 'tmp34' was not declared in this scope")
        return run

    monkeypatch.setattr(torch, "compile", failing_compile)
    fn = _torch_compile(lambda x: torch.tanh(x) * 2.0, "the test region")
    x = torch.linspace(-1.0, 1.0, 5)
    with pytest.warns(RuntimeWarning, match="the test region.*tmp34"):
        got = fn(x)
    torch.testing.assert_close(got, torch.tanh(x) * 2.0)
    torch.testing.assert_close(fn(x * 3.0), torch.tanh(x * 3.0) * 2.0)  # eager from now on
    bad = _torch_compile(lambda a, b: a @ b, "a matmul")
    with pytest.warns(RuntimeWarning), pytest.raises(RuntimeError, match="shapes"):
        bad(torch.ones(2, 3), torch.ones(2, 3))
