"""`Executor.tick()` runs one step of the outermost loop (API §7.10), as a user sees it
(acceptance accept5a): after tick k the sinks of k outer iterations have fired. With the
outer dimension vectorised (the work over (i, t) batched over i into one loop over t) and
symbol values hoisted into loops of their own, the schedule has several top-level loops;
every iteration of each was a step: 12 ticks for 3 iterations, the first 8 firing no sink.
Top-level loops that run no user function (sink, source, map UDF, barrier) are no steps
now; they run inside the next one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

I_, T_ = 3, 4
CONFIGS = [(backend, on) for backend in ("torch", "jax", "numpy") for on in (True, False)]


def config(backend: str, on: bool) -> ExecutionConfig:
    return dataclasses.replace(ExecutionConfig(dev="cpu", backend=backend),
                               enable_vectorization=on, enable_fusion=on)


def _episode_sum(i: int) -> float:
    x, total = float(np.sin(i)), 0.0
    for t in range(T_):
        total += x
        x = float(np.tanh(x * 0.5)) + t
    return total


@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_one_tick_per_outer_iteration(backend: str, on: bool) -> None:
    ctx = TempoContext(config(backend, on), dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    log: list[tuple[int, float]] = []
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(i, t))
        x[i, 0] = RT.from_symbol(i).cast(dtypes.float32).sin()
        x[i, t + 1] = (x * 0.5).tanh() + RT.from_symbol(t).cast(dtypes.float32)
        x[i, 0:T].sum(0).sink_with_ts_udf(
            lambda v, ts: log.append((ts[i], float(np.asarray(v)))))
    exe = ctx.compile({I: I_, T: T_})
    seen = []
    while exe.tick():
        seen.append([k for k, _ in log])
        assert len(seen) <= 2 * I_ + 2, seen
    assert seen == [[0], [0, 1], [0, 1, 2]]
    np.testing.assert_allclose([v for _, v in log], [_episode_sum(k) for k in range(I_)],
                               rtol=1e-5)
    log.clear()
    exe.reset()
    exe.execute()  # a whole run after the stepping one
    assert [k for k, _ in log] == [0, 1, 2]


@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_a_symbol_loop_of_its_own_is_no_step(backend: str, on: bool) -> None:
    """x over (b, t) reads from_symbol(t): its values can be made in a loop over t before
    the loop over b; the ticks are still one per b, each firing that b's sinks."""
    ctx = TempoContext(config(backend, on), dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    log: list[tuple[int, int]] = []
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(b, t))
        x[b, 0] = RT.from_symbol(b).cast(dtypes.float32)
        x[b, t + 1] = x * 0.5 + RT.from_symbol(t).cast(dtypes.float32) ** 2.0
        x.sink_with_ts_udf(lambda v, ts: log.append((ts[b], ts[t])))
    exe = ctx.compile({B: 2, T: 3})
    ticks = 0
    while exe.tick():
        ticks += 1
        assert log and log[-1][0] == ticks - 1 and len(log) == 3 * ticks, log
    assert ticks == 2 and len(log) == 6


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_barrier_is_no_step_of_its_own(backend: str) -> None:
    """tick() returned True at a barrier having run nothing; it now runs on to the next
    step. execute_until_barrier still stops there."""
    ctx = TempoContext(config(backend, True), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    log: list[str] = []
    with ctx:
        x = RT.from_symbol(t).cast(dtypes.float32) * 2.0
        x.sink_with_ts_udf(lambda v, ts: log.append(f"x{ts[t]}"))
        RT.barrier("mid")
        x[0:T].sum().sink_udf(lambda v: log.append(f"sum={float(np.asarray(v)):g}"))
    exe = ctx.compile({T: 3})
    after = []
    while exe.tick():
        after.append(list(log))
    assert after == [["x0"], ["x0", "x1"], ["x0", "x1", "x2"], ["x0", "x1", "x2", "sum=6"]]
    log.clear()
    exe.reset()
    exe.execute_until_barrier("mid")
    assert log == ["x0", "x1", "x2"]


def _backend_scalar(backend: str, v: float) -> object:
    if backend == "torch":
        import torch

        return torch.tensor(v)
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(v, dtype=jnp.float32)
    return np.float32(v)


@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_a_loop_that_only_reads_user_data_is_no_step(backend: str, on: bool) -> None:
    """Weights read per layer by a source (as Llama's loader does) run in a loop of their
    own before the loop that sinks (accept6 c11: a streamed generation gave 9 empty ticks
    first, one per layer and per prompt token). Each tick must fire one sink."""
    ctx = TempoContext(config(backend, on), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    log: list[float] = []
    with ctx:
        layer, L = ctx.new_perm_var(3)
        w = RT.source_with_ts_udf(lambda ts: _backend_scalar(backend, float(ts[layer] + 1)), (),
                                  dtypes.float32, domain=(layer,))
        x = w[0:L].sum() * RT.from_symbol(t).cast(dtypes.float32)
        x.sink_udf(lambda v: log.append(float(np.asarray(v))))
    exe = ctx.compile({T: T_})
    seen = []
    while exe.tick():
        seen.append(len(log))
    assert seen[:T_] == list(range(1, T_ + 1)), seen
    assert log == [6.0 * k for k in range(T_)]  # 1 + 2 + 3 per step
