"""Ops run only where a reader needs them (`schedule.domains._restrict_to_demand`).

An op used to run at every point of its domain unless one of its reads left a source;
a value index computed from `t - 1` (a data value, not a read) then ran at t = 0 with
index -1, which torch refuses (accept7 finding 9: `prev[True] = tg.index(0, t - 1)` with
`enable_index_ops=False`, whose gather fed a vectorised recurrence that reads it at 1:T
only; also `y = x.index(0, t - 1)` read as `y[1:T]`, with or without index ops). numpy
wraps -1 silently (a value nobody reads). Checked on the three backends, vectorisation
on and off, against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

BACKENDS = ("torch", "jax", "numpy")
TGT = np.array([[5, 7, 2, 4], [1, 3, 8, 6]])


def _ctx(backend: str, vec: bool, index_ops: bool) -> TempoContext:
    cfg = ExecutionConfig(dev="cpu", backend=backend, enable_index_ops=index_ops,
                          enable_vectorization=vec)
    return TempoContext(cfg, dim_names=("b", "t"))


@pytest.mark.parametrize("vec", [True, False], ids=["vec", "novec"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_branch_fed_by_an_index_of_t_minus_1(backend: str, vec: bool) -> None:
    """accept7 repro index_ops_off_branch.py: prev[b, 0] = 0, prev[True] = tg[t - 1]."""
    ctx = _ctx(backend, vec, index_ops=False)
    ((b, B), (t, T)) = ctx.variables_and_bounds
    out: dict[str, Any] = {}
    with ctx:
        tg = RT.const(TGT.astype(np.int64)).index(0, b)
        prev = RT.placeholder((), dtypes.default_int, domain=(b, t))
        prev[b, 0] = RT.const(0, dtype=dtypes.default_int)
        prev[True] = tg.index(0, t - 1).cast(dtypes.default_int)
        cur = tg.index(0, t).cast(dtypes.default_int)
        (prev + cur)[0:B, 0:T].sink_udf(lambda v: out.__setitem__("sum", np.asarray(v)))
        prev[0:B, 0:T].sink_udf(lambda v: out.__setitem__("prev", np.asarray(v)))
    ctx.compile({B: 2, T: 4}).execute()
    want_prev = np.concatenate([np.zeros((2, 1), np.int64), TGT[:, :3]], axis=1)
    np.testing.assert_array_equal(out["prev"], want_prev)
    np.testing.assert_array_equal(out["sum"], want_prev + TGT)


@pytest.mark.parametrize("index_ops", [True, False], ids=["index_ops", "gather"])
@pytest.mark.parametrize("vec", [True, False], ids=["vec", "novec"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_index_of_t_minus_1_read_from_t_1(backend: str, vec: bool, index_ops: bool) -> None:
    """y = tg.index(0, t - 1) * 10 read as y[0:B, 1:T]: y is never needed at t = 0."""
    ctx = _ctx(backend, vec, index_ops)
    ((b, B), (t, T)) = ctx.variables_and_bounds
    out: list[np.ndarray] = []
    with ctx:
        tg = RT.const(TGT.astype(np.int64)).index(0, b)
        y = tg.index(0, t - 1) * 10
        y[0:B, 1:T].sink_udf(lambda v: out.append(np.asarray(v)))
    ctx.compile({B: 2, T: 4}).execute()
    np.testing.assert_array_equal(out[-1], TGT[:, :3] * 10)


def test_an_op_read_at_the_last_point_only_runs_there() -> None:
    """The schedule runs a pure op only at the points its readers take (x * 2 read as
    y[T - 1] runs at t = T - 1 only); a user function keeps every point (its calls are what
    the user wrote)."""
    def build(udf: bool) -> tuple[Any, list[float], list[int]]:
        ctx = _ctx("numpy", False, True)
        ((b, B), (t, T)) = ctx.variables_and_bounds
        calls: list[int] = []
        out: list[float] = []

        def seen(v: Any) -> Any:
            calls.append(1)
            return v

        with ctx:
            x = RT.from_symbol(t).cast(dtypes.float32)
            y = x.map_udf(seen, (), dtypes.float32) if udf else x * 2.0
            y[T - 1].sink_udf(lambda v: out.append(float(v)))
        exe = ctx.compile({B: 1, T: 5})
        exe.execute()
        return exe, out, calls

    exe, out, _ = build(udf=False)
    assert out == [8.0]
    assert "for t in range(4, 4 + 1)" in exe.schedule_text()  # was range(0, 4 + 1)
    exe, out, calls = build(udf=True)
    assert out == [4.0] and len(calls) == 5
