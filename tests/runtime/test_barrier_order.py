"""Barriers (API §3.6, §7.10): every sink recorded before `RT.barrier(name)` fires at all
its points before it, every sink recorded after fires after it, and
`execute_until_barrier(name)` stops exactly there (accept5a barrier_order: under the test
config the barrier read only the last points of the earlier sinks' inputs, so it ran the
sink recorded after it and skipped the one before). `execute()` after it ends that run
without firing the earlier sinks again; a second `execute_until_barrier` ends the run and
stops at the barrier of the next one. Logs are checked sink by sink against the recorded
order, and the values each sink receives against numpy."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

CONFIGS = [(be, kind) for be in ("torch", "jax", "numpy") for kind in ("default", "test")]
B_, T_ = 2, 3

Log = list[tuple[str, tuple[int, ...], np.ndarray]]


def _cfg(backend: str, kind: str) -> ExecutionConfig:
    """`default`: every optimisation on (vectorisation, fusion); `test`: all off."""
    if kind == "test":
        return dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend, path="")
    return ExecutionConfig(dev="cpu", backend=backend)


def _sink(log: Log, name: str, x: Any, *dims: Any) -> None:
    """Log (name, point along `dims`, value) at every point of x."""
    RT.sink_with_ts_udf(x, lambda v, ts: log.append(
        (name, tuple(int(ts[d]) for d in dims), np.asarray(np.asarray(v).tolist()))))


def _names(log: Log) -> list[str]:
    """The sinks in firing order, each run of one sink's points as one entry."""
    out: list[str] = []
    for name, _, _ in log:
        if not out or out[-1] != name:
            out.append(name)
    return out


def _check(log: Log, want: list[str], values: dict[str, dict[tuple[int, ...], np.ndarray]]
           ) -> None:
    """The sinks fired in the order `want`, each once at each of its points, with the
    values numpy gives."""
    assert _names(log) == want, _names(log)
    for name in want:
        got = {p: v for n, p, v in log if n == name}
        assert len(got) == sum(n == name for n, _, _ in log)  # no point twice
        assert sorted(got) == sorted(values[name]), (name, sorted(got))
        for p, v in values[name].items():
            np.testing.assert_allclose(got[p], v, rtol=1e-5, err_msg=f"{name} at {p}")


def _xs() -> np.ndarray:
    return np.add.outer(np.arange(B_), np.arange(T_)).astype(np.float32)  # x[b, t] = b + t


def _repro(backend: str, kind: str, log: Log) -> Any:
    """The accept5a program: a per-(b, t) sink that also needs every b at its t, the
    barrier, then a sink of a total over everything."""
    ctx = TempoContext(_cfg(backend, kind), dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        x = RT.from_symbol(b).cast(dtypes.float32) + RT.from_symbol(t).cast(dtypes.float32)
        tot_t = x[0:B, t].sum(0)
        RT.sink_many_with_ts_udf([x, tot_t], lambda vs, ts: log.append(
            ("before", (int(ts[b]), int(ts[t])),
             np.array([float(np.asarray(v)) for v in vs]))))
        RT.barrier("mid")
        _sink(log, "after", (x * 3.0)[0:B, 0:T].sum())
    return ctx.compile({B: B_, T: T_})


def _repro_values() -> dict[str, dict[tuple[int, ...], np.ndarray]]:
    x = _xs()
    before = {(b, t): np.array([x[b, t], x[:, t].sum()]) for b in range(B_) for t in range(T_)}
    return {"before": before, "after": {(): np.array(3.0 * x.sum())}}


@pytest.mark.parametrize("backend,kind", CONFIGS)
def test_execute_until_barrier_runs_exactly_the_sinks_before_it(backend: str,
                                                                kind: str) -> None:
    """Before the fix (test config): the log was ['after'] (the wrong sink, none of the
    'before' points)."""
    log: Log = []
    exe = _repro(backend, kind, log)
    exe.execute_until_barrier("mid")
    _check(log, ["before"], _repro_values())
    exe.execute()  # ends the run: 'after' once, 'before' not again
    _check(log, ["before", "after"], _repro_values())
    log.clear()
    exe.execute()  # a whole run
    _check(log, ["before", "after"], _repro_values())


def _chain(backend: str, kind: str, log: Log) -> Any:
    """Sinks over (t,), (b, t), () and (b,) between three barriers, over one recurrence
    and values shared across the barriers (so fusing their loops is tempting)."""
    ctx = TempoContext(_cfg(backend, kind), dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        x = RT.from_symbol(b).cast(dtypes.float32) + RT.from_symbol(t).cast(dtypes.float32)
        o = RT.placeholder((), dtypes.float32, domain=(t,))
        o[0] = RT.const(1.0)
        o[t + 1] = o * 0.5 + 1.0
        _sink(log, "s1", o, t)
        RT.barrier("a")
        _sink(log, "s2", x * o, b, t)
        _sink(log, "s3", RT.const(7.0))
        RT.barrier("b")
        _sink(log, "s4", o[0:T].sum())
        RT.barrier("c")
        _sink(log, "s5", x[b, 0:T].sum(0) + o[T - 1], b)
        _sink(log, "s6", o * 2.0, t)
    return ctx.compile({B: B_, T: T_})


def _chain_values() -> dict[str, dict[tuple[int, ...], np.ndarray]]:
    x = _xs()
    o = np.empty(T_, np.float32)
    o[0] = 1.0
    for k in range(1, T_):
        o[k] = o[k - 1] * 0.5 + 1.0
    return {"s1": {(t,): o[t] for t in range(T_)},
            "s2": {(b, t): x[b, t] * o[t] for b in range(B_) for t in range(T_)},
            "s3": {(): np.float32(7.0)},
            "s4": {(): o.sum()},
            "s5": {(b,): x[b].sum() + o[-1] for b in range(B_)},
            "s6": {(t,): 2.0 * o[t] for t in range(T_)}}


# The sinks between two barriers in recording order; within a group any order.
CHAIN = [["s1"], ["s2", "s3"], ["s4"], ["s5", "s6"]]


def _in_groups(log: Log, groups: list[list[str]]) -> None:
    """The log's sinks fired group after group; inside one group in any order, their
    points interleaved or not."""
    names, k = [n for n, _, _ in log], 0
    for g in groups:
        j = k
        while j < len(names) and names[j] in g:
            j += 1
        assert set(names[k:j]) == set(g), (_names(log), groups)
        k = j
    assert k == len(names), (_names(log), groups)


def _chain_checked(log: Log, runs: int = 1) -> None:
    """Each point of each sink `runs` times, with numpy's value."""
    for name, vals in _chain_values().items():
        got = [(p, v) for n, p, v in log if n == name]
        assert sorted(p for p, _ in got) == sorted(list(vals) * runs), name
        for p, v in got:
            np.testing.assert_allclose(v, vals[p], rtol=1e-5, err_msg=f"{name} at {p}")


@pytest.mark.parametrize("backend,kind", CONFIGS)
def test_several_barriers_stop_in_order_and_execute_ends_the_run(backend: str,
                                                                 kind: str) -> None:
    log: Log = []
    exe = _chain(backend, kind, log)
    exe.execute_until_barrier("a")
    _in_groups(log, CHAIN[:1])
    exe.execute_until_barrier("b")
    _in_groups(log, CHAIN[:2])
    exe.execute_until_barrier("c")
    _in_groups(log, CHAIN[:3])
    exe.execute()
    _in_groups(log, CHAIN)
    _chain_checked(log)


@pytest.mark.parametrize("backend,kind", [("torch", "default"), ("numpy", "test")])
def test_repeated_execute_until_barrier_stops_at_it_in_the_next_run(backend: str,
                                                                    kind: str) -> None:
    """The second call ends the run it had stopped (the sinks after 'a' fire once) and
    stops at 'a' of the next run; it used to run the rest and return at the end."""
    log: Log = []
    exe = _chain(backend, kind, log)
    exe.execute_until_barrier("a")
    _in_groups(log, CHAIN[:1])
    exe.execute_until_barrier("a")
    _in_groups(log, [*CHAIN, ["s1"]])
    log.clear()
    exe.execute_until_barrier("c")  # on in the same run, from 'a' to 'c'
    _in_groups(log, CHAIN[1:3])
    log.clear()
    exe.reset()  # a fresh run
    exe.execute_until_barrier("b")
    _in_groups(log, CHAIN[:2])
    assert exe.tick()  # on in the same run: execute() still ends it
    exe.execute()
    _in_groups(log, CHAIN)
    _chain_checked(log)


def test_isl_scheduler_keeps_the_barrier_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """isl's own scheduler (the fallback) gets the same order constraints."""
    import tempo.schedule.scheduler as scheduler

    monkeypatch.setattr(scheduler, "FORCE_ISL", True)
    for backend, kind in (("torch", "default"), ("numpy", "test")):
        log: Log = []
        exe = _chain(backend, kind, log)
        exe.execute_until_barrier("b")
        _in_groups(log, CHAIN[:2])
        exe.execute()
        _in_groups(log, CHAIN)
        _chain_checked(log)


@pytest.mark.parametrize("backend,kind", [("torch", "default"), ("numpy", "test")])
def test_barrier_between_loops_over_a_dimension_a_boolean_bound_ends(backend: str,
                                                                     kind: str) -> None:
    """A sink over t after the barrier runs in a loop of its own after it, over the
    points the first loop found (the bound ends t after x >= 4 everywhere: 5 points)."""
    ctx = TempoContext(_cfg(backend, kind), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    log: Log = []
    with ctx:
        x = RT.placeholder((2,), dtypes.float32, domain=(t,))
        x[0] = RT.const([0.0, 2.0])
        x[t + 1] = x + 1.0
        _sink(log, "x", x, t)
        RT.barrier("mid")
        _sink(log, "y", x * 2.0, t)
        _sink(log, "sum", x[0:T].sum(0))
    exe = ctx.compile({T: (10, x >= 4.0)})
    xs = {(k,): np.array([k, k + 2.0]) for k in range(5)}
    want = {"x": xs, "y": {p: 2 * v for p, v in xs.items()},
            "sum": {(): np.array([10.0, 20.0])}}
    exe.execute_until_barrier("mid")
    _check(log, ["x"], want)
    assert [p for n, p, _ in log] == [(k,) for k in range(5)]
    exe.execute()
    _in_groups(log, [["x"], ["y", "sum"]])
    for name, vals in want.items():
        got = {p: v for n, p, v in log if n == name}
        assert sorted(got) == sorted(vals)
        for p, v in vals.items():
            np.testing.assert_allclose(got[p], v)


def _udfs(backend: str, kind: str, log: Log) -> Any:
    """A UDF source over (b, t) and its sink before the barrier; after it a second
    source (with a vectorised form, which vectorisation takes in the default config: a
    new op), a map UDF of the first source, a sink of both and a sink of a sum over b of
    the second. Every call logs itself (a batched call each point it makes)."""
    ctx = TempoContext(_cfg(backend, kind), dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds

    def point(name: str, scale: float) -> Any:
        def fn(ts: dict) -> np.ndarray:
            log.append((name, (int(ts[b]), int(ts[t])), np.float32(0)))
            return np.float32(scale * (10 * ts[b] + ts[t]))
        return fn

    def batched(dim: Any, n: int) -> Any:  # all points along b, or along t, at once
        def fn(ts: dict) -> np.ndarray:
            pts = [(k, int(ts[t])) if dim.name == "b" else (int(ts[b]), k) for k in range(n)]
            log.extend(("src2", p, np.float32(0)) for p in pts)
            return np.array([2.0 * (10 * i + j) for i, j in pts], np.float32)
        return fn

    def mapped(v: Any, ts: dict) -> np.ndarray:
        log.append(("map", (int(ts[b]), int(ts[t])), np.float32(0)))
        return np.asarray(np.asarray(v).tolist(), np.float32) + 1.0

    with ctx:
        s1 = RT.source_with_ts_udf(point("src1", 1.0), (), dtypes.float32, domain=(b, t))
        _sink(log, "s1", s1, b, t)
        RT.barrier("mid")
        s2 = RT.source_with_ts_udf(point("src2", 2.0), (), dtypes.float32, domain=(b, t),
                                   lazy_vectorized_version=batched)
        m = s1.map_with_ts_udf(mapped)
        _sink(log, "s2", s2 + m, b, t)
        _sink(log, "s3", ((s2 * 0.5 + 1.0) * s2 - 3.0)[0:B, t].sum(0), t)
    return ctx.compile({B: B_, T: T_})


@pytest.mark.parametrize("backend,kind", CONFIGS)
def test_udf_sources_and_maps_stay_on_their_side_of_the_barrier(backend: str,
                                                               kind: str) -> None:
    """Before: the source and map recorded after the barrier could run before it (in the
    loop of the first source); the sink before it could run after it."""
    log: Log = []
    exe = _udfs(backend, kind, log)
    exe.execute_until_barrier("mid")
    _in_groups(log, [["src1", "s1"]])
    exe.execute()
    _in_groups(log, [["src1", "s1"], ["src2", "map", "s2", "s3"]])
    pts = sorted((b, t) for b in range(B_) for t in range(T_))
    for name in ("src1", "s1", "src2", "map", "s2"):  # each point once
        assert sorted(p for n, p, _ in log if n == name) == pts, name
    got = {p: v for n, p, v in log if n == "s2"}
    for b, t in pts:  # s2 = 2 (10 b + t) + (10 b + t) + 1
        np.testing.assert_allclose(got[(b, t)], 3.0 * (10 * b + t) + 1.0)
    x2 = 2.0 * (10.0 * np.arange(B_)[:, None] + np.arange(T_)[None, :])
    s3 = ((x2 * 0.5 + 1.0) * x2 - 3.0).sum(0)
    got = {p: v for n, p, v in log if n == "s3"}
    assert sorted(got) == [(t,) for t in range(T_)]
    for t in range(T_):
        np.testing.assert_allclose(got[(t,)], s3[t], rtol=1e-5)


def test_a_value_from_after_the_barrier_read_before_it_is_a_schedule_error() -> None:
    """A sink before the barrier reading (through a placeholder defined later) a source
    recorded after it cannot run on its side: a ScheduleError naming both lines."""
    from tempo.core.errors import ScheduleError

    ctx = TempoContext(_cfg("numpy", "test"), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        p = RT.placeholder((), dtypes.float32, domain=(t,))
        p.sink_udf(lambda v: None)  # MISTAKE
        RT.barrier("mid")
        p[True] = RT.source_udf(lambda: np.float32(1.0), (), dtypes.float32, domain=(t,))
    with pytest.raises(ScheduleError, match=r"barrier 'mid'.*source_udf") as info:
        ctx.compile({T: 3})
    assert "# MISTAKE" in str(info.value) or "p.sink_udf" in str(info.value)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_source_before_a_barrier_is_freed_at_its_last_read(backend: str) -> None:
    """The order read of a UDF source by the barrier is no read of its tensor: its 16
    points of 4 KiB were all held until the barrier (peak 65544 bytes), now one at a
    time (4104)."""
    cfg = dataclasses.replace(ExecutionConfig(dev="cpu", backend=backend),
                              executor_debug_mode=True)  # tracks the peak of every store
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    log: list[Any] = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: np.full((1024,), ts[t], np.float32), (1024,),
                                  dtypes.float32, domain=(t,))
        x.sum().sink_udf(lambda v: log.append(float(np.asarray(v))))
        RT.barrier("mid")
        RT.const(1.0).sink_udf(lambda v: log.append("after"))
    exe = ctx.compile({T: 16})
    exe.execute_until_barrier("mid")
    assert log == [1024.0 * k for k in range(16)]
    peak = exe.memory_stats()["peak_bytes"]
    assert peak is not None and peak < 2 * 4096, peak
    exe.execute()
    assert log[-1] == "after" and len(log) == 17
