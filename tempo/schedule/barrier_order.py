"""Order around barriers (API §3.6, §7.10): every user function (sink, UDF source, map
UDF) recorded before `RT.barrier(name)` runs at all its points before it, every one
recorded after it runs after it, and barriers run in the order they were recorded.

The schedulers order ops only by their reads, and a sink or a barrier has no output to
read, so nothing kept a sink on its side of a barrier (accept5a barrier_order: with
vectorisation off, `execute_until_barrier("mid")` ran the sink recorded after the
barrier and not the one before it). The scheduling copy of the graph gets one read per
(user function, nearest barrier) pair: the barrier "reads" every executed point of a
function before it, a function after it "reads" the barrier. Like `stop_order`'s reads
they exist only for the scheduler (the executor runs the real graph, whose kernels never
see them); unlike them they are added after the executed domains are known, since they
must not drop or demand any point, and their relations are the product of the two
executed domains.

Sinks and barriers keep their op ids through every pass (no pass batches, fuses, merges
or reduces them), and ids are given in recording order: a sink's id says its side.
Vectorisation rebuilds UDF sources and map UDFs under new ids; they carry the id of the
barrier recorded before them in a tag (`op_sources.barrier_before`)."""

from __future__ import annotations

import bisect
from typing import NoReturn

import islpy as isl

from tempo.core import index_expr as ie
from tempo.core import naming, ops
from tempo.core.errors import ScheduleError
from tempo.core.op_sources import barrier_before
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.schedule.isl_program import Analysis, stmt_name

_TAGGED = (ops.UDFSourceOp, ops.MapUDFOp)


def has_barrier(sdg: SDG) -> bool:
    return any(isinstance(op, ops.BarrierOp) for op in sdg.ops.values())


def ordered_by_barriers(op: ops.Op) -> bool:
    """Ops a barrier orders: they must stay in the scheduled part (not the prologue)."""
    return isinstance(op, ops.SinkUDFOp | ops.BarrierOp | ops.UDFSourceOp | ops.MapUDFOp)


def add_barrier_order(sdg: SDG, an: Analysis) -> None:
    """Add the scheduling-only reads that order `sdg`'s user functions around its barriers
    (in place: `sdg` is the scheduler's own copy) and their relations to `an.edge_maps`.
    A function recorded after a barrier whose value a function before it needs (through a
    placeholder defined later) is a ScheduleError naming both."""
    barriers = sorted(i for i, op in sdg.ops.items() if isinstance(op, ops.BarrierOp))
    if not barriers:
        return
    for a, b in zip(barriers, barriers[1:]):
        _order(sdg, an, a, b)
    for i, op in list(sdg.ops.items()):
        if isinstance(op, ops.SinkUDFOp):
            k = bisect.bisect_left(barriers, i)
        elif isinstance(op, _TAGGED):
            last = barrier_before(op)
            k = 0 if last is None else bisect.bisect_right(barriers, last)
        else:
            continue
        if k > 0:
            _order(sdg, an, barriers[k - 1], i)
        if k < len(barriers):
            _order(sdg, an, i, barriers[k])
    for b in barriers:
        _check_no_cycle(sdg, b)


def _order(sdg: SDG, an: Analysis, first: int, then: int) -> None:
    """`then` runs after every executed point of `first`: it reads all of `first`, as
    output -1, no tensor (a UDF's output 0 would stay alive until the read)."""
    dom = sdg.ops[first].domain
    whole = ie.IndexSequence(tuple(
        ie.Slice(ie.lift_to_int_ie(0), ie.lift_to_int_ie(dom.bound_of(v)))
        for v in dom.variables))
    e = Edge(then, len(sdg.in_edges[then]), TensorId(first, -1), whole)
    sdg.add_edge(e)
    src, dst = an.executed[stmt_name(first)], an.executed[stmt_name(then)]
    an.edge_maps[id(e)] = isl.UnionMap.from_map(isl.Map.from_domain_and_range(src, dst))


def _check_no_cycle(sdg: SDG, barrier: int) -> None:
    """No path from the barrier back to itself: what runs after it feeds nothing that
    runs before it."""
    parent: dict[int, int] = {}
    todo = [barrier]
    while todo:
        i = todo.pop()
        for e in sdg.out_edges.get(i, []):
            if e.sink == barrier:
                _cycle_error(sdg, barrier, [*_path(parent, i, barrier), barrier])
            if e.sink not in parent:
                parent[e.sink] = i
                todo.append(e.sink)


def _path(parent: dict[int, int], end: int, start: int) -> list[int]:
    out = [end]
    while out[-1] != start:
        out.append(parent[out[-1]])
    return out[::-1]


def _cycle_error(sdg: SDG, barrier: int, path: list[int]) -> NoReturn:
    op = sdg.ops[barrier]
    label = op.label if isinstance(op, ops.BarrierOp) else str(barrier)
    users = [i for i in path[1:-1] if isinstance(sdg.ops[i], (ops.SinkUDFOp, *_TAGGED))]
    after, before = (users[0], users[-1]) if users else (path[1], path[-2])

    def word(i: int) -> str:
        return naming.op_label(sdg.ops[i], sdg.names)

    raise ScheduleError(
        f"{word(before)} is recorded before the barrier {label!r} but needs the value of "
        f"{word(after)}, recorded after it: it cannot run before the barrier. Record the "
        "barrier after both, or define the value before the barrier",
        site=sdg.ops[before].site)
