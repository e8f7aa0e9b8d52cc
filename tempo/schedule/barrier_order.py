"""Order around barriers (API §3.6, §7.10): every sink recorded before `RT.barrier(name)`
runs at all its points before the barrier, every sink recorded after it runs after it,
and barriers run in the order they were recorded.

The schedulers order ops only by their reads, and a sink or a barrier has no output to
read, so nothing kept a sink on its side of a barrier (accept5a barrier_order: with
vectorisation off, `execute_until_barrier("mid")` ran the sink recorded after the
barrier and not the one before it). The scheduling copy of the graph gets one read per
(sink, nearest barrier) pair: the barrier "reads" every executed point of a sink before
it, a sink after it "reads" the barrier. Like `stop_order`'s reads they exist only for
the scheduler (the executor runs the real graph, whose kernels never see them); unlike
them they are added after the executed domains are known, since they must not drop or
demand any point, and their relations are the product of the two executed domains.

Sinks and barriers keep their op ids through every pass (no pass batches, fuses, merges
or reduces them), and ids are given in recording order: the ids say which side of a
barrier a sink was recorded on."""

from __future__ import annotations

import bisect

import islpy as isl

from tempo.core import index_expr as ie
from tempo.core import ops
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.schedule.isl_program import Analysis, stmt_name


def has_barrier(sdg: SDG) -> bool:
    return any(isinstance(op, ops.BarrierOp) for op in sdg.ops.values())


def ordered_by_barriers(op: ops.Op) -> bool:
    """Ops a barrier orders: they must stay in the scheduled part (not the prologue)."""
    return isinstance(op, ops.SinkUDFOp | ops.BarrierOp)


def add_barrier_order(sdg: SDG, an: Analysis) -> None:
    """Add the scheduling-only reads that order `sdg`'s sinks around its barriers (in
    place: `sdg` is the scheduler's own copy) and their relations to `an.edge_maps`."""
    barriers = sorted(i for i, op in sdg.ops.items() if isinstance(op, ops.BarrierOp))
    if not barriers:
        return
    for a, b in zip(barriers, barriers[1:]):
        _order(sdg, an, a, b)
    for i, op in sdg.ops.items():
        if not isinstance(op, ops.SinkUDFOp):
            continue
        k = bisect.bisect_left(barriers, i)
        if k > 0:
            _order(sdg, an, barriers[k - 1], i)
        if k < len(barriers):
            _order(sdg, an, i, barriers[k])


def _order(sdg: SDG, an: Analysis, first: int, then: int) -> None:
    """`then` runs after every executed point of `first`: it reads all of `first`."""
    dom = sdg.ops[first].domain
    whole = ie.IndexSequence(tuple(
        ie.Slice(ie.lift_to_int_ie(0), ie.lift_to_int_ie(dom.bound_of(v)))
        for v in dom.variables))
    e = Edge(then, len(sdg.in_edges[then]), TensorId(first, 0), whole)
    sdg.add_edge(e)
    src, dst = an.executed[stmt_name(first)], an.executed[stmt_name(then)]
    an.edge_maps[id(e)] = isl.UnionMap.from_map(isl.Map.from_domain_and_range(src, dst))
