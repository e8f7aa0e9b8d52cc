"""A placeholder that reads itself around a cycle of other points (accept8 mistakes8b t03):
`x[True] = x.previous + 1.0` with no base case reads the last point at the origin (lex_prev
wraps around), which reads back down to the origin. isl finds no schedule and no point waits
on itself, so the error said "this is a bug in Tempo's compiler, not in your program". It now
names the definition, the placeholder and the cycle's points, and says to define the start."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import ScheduleError


def _cfg(backend: str, variant: str) -> ExecutionConfig:
    if variant == "test_cfg":
        return dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend)
    return ExecutionConfig(dev="cpu", backend=backend)


@pytest.mark.parametrize("variant", ["default", "test_cfg"])
def test_previous_without_a_base_case_names_the_cycle(variant: str) -> None:
    ctx = TempoContext(_cfg("numpy", variant), dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(b, t))
        x[True] = x.previous + 1.0
        x[0:B, 0:T].sink_udf(lambda a: None)
    with pytest.raises(ScheduleError) as info:
        ctx.compile({B: 2, T: 3})
    msg = str(info.value)
    assert "bug in Tempo" not in msg, msg
    assert "x[True] = x.previous + 1.0" in msg and "test_point_cycle_error.py:" in msg, msg
    assert "(b = 0, t = 0) -> (b = 1, t = 2)" in msg and "x.init" in msg, msg


def test_next_around_the_end_names_the_cycle() -> None:
    ctx = TempoContext(_cfg("numpy", "default"), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        x[True] = x.next_ * 0.5
        x[0:T].sink_udf(lambda a: None)
    with pytest.raises(ScheduleError) as info:
        ctx.compile({T: 4})
    msg = str(info.value)
    assert "bug in Tempo" not in msg and "(t = 0) -> (t = 1)" in msg and "x.next_" in msg, msg


def test_the_same_chain_with_its_base_case_runs() -> None:
    ctx = TempoContext(_cfg("numpy", "default"), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    out: dict[str, np.ndarray] = {}
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        x[T - 1] = RT.const(8.0)
        x[True] = x.next_ * 0.5
        x[0:T].sink_udf(lambda a: out.__setitem__("x", np.asarray(a).copy()))
    ctx.compile({T: 4}).execute()
    np.testing.assert_array_equal(out["x"], [1.0, 2.0, 4.0, 8.0])
