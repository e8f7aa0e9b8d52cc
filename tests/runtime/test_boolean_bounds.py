"""A bound given as a boolean tensor (API §7 item 10): `{T: (max, done)}` ends dimension t
after the first point where every element of `done` is true; nothing runs past it, code
after the loop sees the real extent, and nested loops restart at the maximum."""

from __future__ import annotations

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.dtype import dtypes
from tempo.core.errors import BoundError


def _counter(start: list[float], limit: float, max_t: int, backend: str = "torch"):
    from tempo.core.configs import ExecutionConfig

    ctx = TempoContext(ExecutionConfig(dev="cpu", backend=backend), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    seen: list = []
    with ctx:
        x = RT.placeholder((len(start),), dtypes.float32, domain=(t,))
        x[0] = RT.const(start)
        x[t + 1] = x + 1.0
        done = x >= limit
        x.sink_udf(lambda v: seen.append([float(e) for e in v]))
        total: list = []
        x[0:T].sum(0).sink_udf(lambda v: total.append(v))
    return ctx.compile({T: (max_t, done)}), seen, total, t


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_the_loop_ends_when_every_element_is_done(backend: str) -> None:
    exe, seen, total, t = _counter([0.0, 2.0], 4.0, 10, backend)
    exe.execute()
    # element 1 is done at t=2, element 0 at t=4: the dimension has 5 points
    assert seen == [[float(k), float(k + 2)] for k in range(5)]
    assert exe.dimension_extents() == {t.name: 5}
    # a read over 0:T after the loop sees the 5 points that exist
    assert [float(e) for e in total[0]] == [10.0, 20.0]
    seen.clear()
    exe.reset()
    exe.execute()  # runs again to the same end
    assert len(seen) == 5


def test_never_done_runs_to_the_maximum_and_tick_streams() -> None:
    exe, seen, _, t = _counter([0.0], 100.0, 6)
    ticks = 0
    while exe.tick():
        ticks += 1
    assert len(seen) == 6 and exe.dimension_extents() == {t.name: 6}
    # a tick per outer iteration that runs ops: the 6 points, the point x[T] that x[t + 1]
    # writes at t = T - 1, then the sum after the loop; the loop of frees is no tick
    assert ticks == 6 + 1 + 1


def test_tick_stops_where_the_boolean_bound_ends() -> None:
    exe, seen, _, t = _counter([0.0], 3.0, 10)
    ticks = 0
    while exe.tick():
        ticks += 1
    # done at t = 3: 4 points, then the sum after the loop; nothing after the end is a tick
    assert len(seen) == 4 and exe.dimension_extents() == {t.name: 4}
    assert ticks == 4 + 1


def test_nested_dimension_restarts_at_the_maximum() -> None:
    ctx = TempoContext(num_dims=2)
    (i, I), (t, T) = ctx.variables_and_bounds
    seen: list = []
    with ctx:
        x = RT.placeholder((), dtypes.int64, domain=(i, t))
        x[i, 0] = RT.const(0, dtype=dtypes.int64)
        x[i, t + 1] = x + 1
        done = x >= RT.lift(i).cast(dtypes.int64) + 1  # episode i lasts i + 2 steps
        x.sink_with_ts_udf(lambda v, ts: seen.append((ts[i], ts[t], int(v))))
    exe = ctx.compile({I: 3, T: (8, done)})
    exe.execute()
    assert seen == [(ii, tt, tt) for ii in range(3) for tt in range(ii + 2)]


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_bare_boolean_tensor_bound_runs_until_done(backend: str) -> None:
    """`ctx.compile({T: done})` as API §1.3 writes it: the loop runs until `done`, at most
    `default_dim_upper_bound_size` points (the original's default bound of dynamic dims);
    reaching that maximum undone is a BoundError naming the bound and the config field,
    never a silently truncated dimension."""
    from tempo.core.configs import ExecutionConfig

    def run(limit: float, cap: int, seen: list[float] | None = None) -> list[float]:
        cfg = ExecutionConfig(dev="cpu", backend=backend, default_dim_upper_bound_size=cap)
        ctx = TempoContext(cfg, num_dims=1)
        ((t, T),) = ctx.variables_and_bounds
        seen = [] if seen is None else seen
        with ctx:
            x = RT.placeholder((), dtypes.float32, domain=(t,))
            x[0] = RT.const(0.1)
            x[t + 1] = x * 1.5
            x.sink_udf(lambda v: seen.append(float(v)))
            done = x > limit
        ctx.compile({T: done}).execute()
        return seen

    want, v = [], 0.1
    while True:  # numpy reference: stops after the first point above 1.0
        want.append(v)
        if v > 1.0:
            break
        v *= 1.5
    assert run(1.0, 500) == pytest.approx(want, rel=1e-6)
    assert run(1.0, len(want)) == pytest.approx(want, rel=1e-6)  # done at the last point
    seen: list[float] = []
    with pytest.raises(BoundError, match="default_dim_upper_bound_size") as info:
        run(1e9, 7, seen)  # never done
    assert "maximum of 7 points" in str(info.value) and "the bound T)" in str(info.value)
    assert "test_boolean_bounds.py" in str(info.value)  # the compile call's line
    assert seen == pytest.approx([0.1 * 1.5**k for k in range(7)], rel=1e-6)


def test_boolean_bound_errors() -> None:
    ctx = TempoContext(num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        x[0] = 0.0
        x[t + 1] = x + 1.0
        x.sink_udf(lambda v: None)
        flt = x * 2.0
        const = RT.const(True)
    with pytest.raises(BoundError, match="must be bool"):
        ctx.compile({T: (5, flt)})
    with pytest.raises(BoundError, match="must have t in its domain"):
        ctx.compile({T: (5, const)})
    with pytest.raises(BoundError, match="not indexed"):
        ctx.compile({T: (5, (x >= 2.0)[t - 1])})



@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_a_bound_on_a_recurrence_fed_by_a_look_ahead_read(backend: str) -> None:
    """`acc[t + 1] = acc + x[t + 1]` reads x one point ahead, so the scheduler shifts the
    recurrence (its point t runs in iteration t + 1) and `done = acc > 6` is tested there:
    the loop still ends after the first point where done is true, and a sink of x (unshifted)
    is not called past that end."""
    from tempo.core.configs import ExecutionConfig

    ctx = TempoContext(ExecutionConfig(dev="cpu", backend=backend), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    accs: list = []
    xs: list = []
    with ctx:
        acc = RT.placeholder((), dtypes.float32, domain=(t,))
        acc[0] = RT.const(1.0)
        x = RT.source_with_ts_udf(lambda ts: np.float32(0.5 + 0.25 * ts[t]), (),
                                  dtypes.float32, domain=(t,))
        acc[t + 1] = acc + x[t + 1]
        done = acc > 6.0
        acc.sink_with_ts_udf(lambda v, ts: accs.append((ts[t], float(v))))
        x.sink_with_ts_udf(lambda v, ts: xs.append((ts[t], float(v))))
    exe = ctx.compile({T: done})
    exe.execute()
    want_x = [np.float32(0.5 + 0.25 * k) for k in range(100)]  # numpy reference
    want = [np.float32(1.0)]
    while not want[-1] > 6.0:
        want.append(want[-1] + want_x[len(want)])
    n = len(want)  # 6 points: acc first exceeds 6 at t = 5
    assert accs == [(k, pytest.approx(float(v))) for k, v in enumerate(want)]
    assert xs == [(k, pytest.approx(float(want_x[k]))) for k in range(n)]
    assert exe.dimension_extents() == {t.name: n}


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_a_finite_source_read_ahead_is_not_called_past_the_stop(backend: str) -> None:
    """`acc[t + 1] = acc + x[t + 1]` with `done = acc > 3`: x's source (a UDF reading a
    list, as a user reads a file or an env) is called at the points that exist and never
    once more, though the shifted schedule makes x's point t + 1 in the iteration that
    tests done at t. The list holds exactly the points needed: one call more fails."""
    from tempo.core.configs import ExecutionConfig

    data = [0.5, 1.0, 1.5, 2.0]
    want = np.cumsum(np.asarray(data, np.float32))  # numpy reference: first > 3 at t = 3
    assert want[-1] > 3.0 and want[-2] <= 3.0
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend=backend), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    feed = iter(data)
    calls: list = []
    accs: list = []

    def read() -> np.ndarray:
        calls.append(1)
        return np.float32(next(feed))  # past the list: StopIteration

    with ctx:
        x = RT.source_udf(read, (), dtypes.float32, domain=(t,))
        acc = RT.placeholder((), dtypes.float32, domain=(t,))
        acc[0] = x[0]
        acc[t + 1] = acc + x[t + 1]
        done = acc > 3.0
        acc.sink_with_ts_udf(lambda v, ts: accs.append((ts[t], float(v))))
    exe = ctx.compile({T: done})
    exe.execute()
    assert len(calls) == len(data)
    assert accs == [(k, pytest.approx(float(v))) for k, v in enumerate(want)]
    assert exe.dimension_extents() == {t.name: len(data)}
