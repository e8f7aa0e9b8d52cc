"""Runs of one executor interleaved as a user does (API §4.1, §7.10): a whole `execute()`
while a `tick()` run is part-way, then `execute_until_barrier()`; a misspelt barrier name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tempo.api as tapi
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoError

I_, T_ = 3, 6
X = np.random.default_rng(2).normal(size=(I_, T_, 3)).astype(np.float32)


def _program(backend: str, log: list[tuple[int, np.ndarray]]) -> Any:
    """Per iteration i: a recurrence, a window sum and a growing mean over t, sunk whole."""
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend=backend), num_dims=2)
    (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: np.asarray(X[ts[i], ts[t]]), (3,),
                                  dtypes.float32, domain=(i, t))
        o = RT.placeholder((3,), dtypes.float32, domain=(i, t))
        o[i, 0] = x
        o[i, t + 1] = o * 0.5 + x[i, t + 1]
        w = x[i, tapi.max(0, t - 2):t + 1].sum(0)
        g = x[i, 0:t + 1].mean(0)
        (o + w + g)[i, 0:T].sink_with_ts_udf(
            lambda v, ts: log.append((ts[i], np.array(v.tolist()))))
        RT.barrier("after")
    return ctx.compile({I: I_, T: T_})


def _want() -> list[tuple[int, np.ndarray]]:
    out = []
    for i in range(I_):
        o, rows = np.zeros(3), []
        for k in range(T_):
            o = X[i, 0] if k == 0 else o * 0.5 + X[i, k]
            rows.append(o + X[i, max(0, k - 2):k + 1].sum(0) + X[i, :k + 1].mean(0))
        out.append((i, np.stack(rows)))
    return out


def _check(log: list[tuple[int, np.ndarray]]) -> None:
    want = _want()
    assert [i for i, _ in log] == [i for i, _ in want]
    for (_, got), (_, w) in zip(log, want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_execute_supersedes_a_part_way_tick_run(backend: str) -> None:
    """execute_until_barrier() after execute() resumed the tick() run left part-way, whose
    stores execute() had freed: a KeyError raised as a BackendError. It starts afresh."""
    log: list[tuple[int, np.ndarray]] = []
    exe = _program(backend, log)
    while not log:  # part-way through a stepping run
        assert exe.tick()
    log.clear()
    exe.execute()
    _check(log)
    log.clear()
    exe.execute_until_barrier("after")
    _check(log)


def test_unknown_barrier_name_raises_naming_it_and_the_line() -> None:
    """A misspelt barrier ran the whole program silently; it names the barriers there are."""
    exe = _program("torch", [])
    with pytest.raises(TempoError, match=r"'aftr'.*'after'") as info:
        exe.execute_until_barrier("aftr")
    assert "test_executor_runs.py:" in str(info.value)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_get_spatial_tensor_counts_negative_ints_from_the_end(backend: str) -> None:
    """`(-1, -1)` read the point (-1, -1), which no run computes (TensorNotAvailableError);
    like Python and `x[-1]` (§3.4) it is the last point of each dim."""
    import dataclasses

    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend)
    ctx = TempoContext(cfg, num_dims=2)
    (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        y = RT.from_symbol(b) * 10 + RT.from_symbol(t)
    exe = ctx.compile({B: 3, T: 5})
    exe.execute()
    got = exe.get_spatial_tensor_torch(y.tensor_id, (-1, -2))
    assert int(got) == 2 * 10 + 3
    assert exe.get_spatial_tensor_torch(y.tensor_id, (-3, slice(0, 5))).tolist() == [0, 1, 2, 3, 4]


def test_get_spatial_tensor_out_of_range_names_the_dim_and_its_extent() -> None:
    """Point 9 of T=4 said the program 'never computes that point (no reader or sink)'."""
    import dataclasses

    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend="numpy")
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        y = RT.ones((2,)) * t
    exe = ctx.compile({T: 4})
    exe.execute()
    with pytest.raises(TempoError, match=r"t = 9 is out of range .* 4 points") as info:
        exe.get_spatial_tensor_torch(y.tensor_id, (9,))
    assert "test_executor_runs.py:" in str(info.value)
