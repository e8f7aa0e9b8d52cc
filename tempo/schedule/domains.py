"""Where each op runs: its full domain minus the points whose reads would land outside a
source's domain (directly, or on a point the source itself cannot compute). Dropped points
must not be needed by a consumer (under its edge condition) or a side effect."""

from __future__ import annotations

import islpy as isl

from tempo.core import ops
from tempo.core.index_expr import Symbol
from tempo.core.sdg import SDG, Edge


def executed_domains(
    sdg: SDG,
    decl: str,
    context: isl.Set,
    full: dict[str, isl.Set],
    edge_maps: dict[int, isl.UnionMap],
) -> dict[str, isl.Set]:
    from tempo.schedule.isl_program import read_outside, stmt_name

    empty = {k: v.subtract(v) for k, v in full.items()}
    outside = {}
    for op in sdg.topological():
        bad = empty[stmt_name(op.op_id)]
        for e in sdg.in_edges[op.op_id]:
            bad = bad.union(read_outside(sdg, e, decl, context))
        outside[op.op_id] = bad
    executed = {stmt_name(i): full[stmt_name(i)].subtract(b) for i, b in outside.items()}
    # Forward to a fixpoint: a read of a dropped source point drops the reader's point.
    work = [i for i, b in outside.items() if not b.is_empty()]
    while work:
        src = stmt_name(work.pop())
        gone = isl.UnionSet.from_set(full[src].subtract(executed[src]))
        for e in sdg.out_edges.get(int(src[1:]), []):
            sink = stmt_name(e.sink)
            hit = edge_maps[id(e)].intersect_domain(gone).range()
            if hit.is_empty():
                continue
            new = executed[sink].subtract(isl.Set.from_union_set(hit))
            if not new.is_equal(executed[sink]):
                executed[sink] = new
                work.append(e.sink)
    valid = dict(executed)
    branch_only = _restrict_to_demand(sdg, executed, edge_maps)
    for op in sdg.topological():
        name = stmt_name(op.op_id)
        bad = full[name].subtract(valid[name])
        if bad.is_empty():
            continue
        side_effect = isinstance(op, ops.SinkUDFOp | ops.BarrierOp)
        needed = full[name] if side_effect else empty[name]
        for e in sdg.out_edges.get(op.op_id, []):
            sink_dom = isl.UnionSet.from_set(executed[stmt_name(e.sink)])
            img = edge_maps[id(e)].intersect_range(sink_dom)
            if not img.is_empty():
                needed = needed.union(isl.Set.from_union_set(img.domain()))
        clash = needed.intersect(bad)
        # An op that can never run is an error, unless it only feeds recurrence branches
        # that are never taken (a parameter update when the update dim has one point).
        never = valid[name].is_empty() and op.op_id not in branch_only
        if not clash.is_empty() or never:
            where = clash if not clash.is_empty() else bad
            from tempo.schedule.explain import outside_error

            raise outside_error(sdg, op, where, decl, context, full, valid, edge_maps)
    return executed


def _restrict_to_demand(
    sdg: SDG, executed: dict[str, isl.Set], edge_maps: dict[int, isl.UnionMap]
) -> set[int]:
    """Ops run only where a reader needs them, readers first: every op without effects
    (a point nobody reads is wasted work, and may be a point where its inputs are
    garbage: `prev[True] = tg.index(0, t - 1)` gathers index -1 at t = 0, which the
    recurrence never takes), and an op with effects (a user function, a random draw)
    only when it feeds recurrence branches alone (directly or through such ops), so its
    calls stay as the user wrote them. Returns the latter set: `s[True] = f(s.previous)`
    never computes f at t = 0, where it would read the future s[T-1]; such an op may have
    no point at all (a parameter update when the update dim has one point)."""
    from tempo.schedule.isl_program import stmt_name

    branch_only: set[int] = set()
    for op in reversed(list(sdg.topological())):
        outs = sdg.out_edges.get(op.op_id, [])
        if (not outs or isinstance(op, ops.MergeOp | ops.SinkUDFOp | ops.BarrierOp)
                or sdg.is_kept(op.op_id)):
            continue
        feeds_branches = all(isinstance(sdg.ops[e.sink], ops.MergeOp) or e.sink in branch_only
                             for e in outs)
        if feeds_branches:
            branch_only.add(op.op_id)
        elif not pure(op):
            continue
        name = stmt_name(op.op_id)
        if not feeds_branches and any(_reads_all(sdg, e, executed) for e in outs):
            continue  # a reader of every point it has: nothing to drop
        needed = executed[name].subtract(executed[name])
        for e in outs:
            sink_dom = isl.UnionSet.from_set(executed[stmt_name(e.sink)])
            img = edge_maps[id(e)].intersect_range(sink_dom).domain()
            if not img.is_empty():
                needed = needed.union(isl.Set.from_union_set(img))
        executed[name] = executed[name].intersect(needed)
    return branch_only


_EFFECTS = (ops.UDFSourceOp, ops.MapUDFOp, ops.RandOp, ops.SinkUDFOp, ops.BarrierOp,
            ops.MergeOp)


def pure(op: ops.Op) -> bool:
    """No effect but its value, so it may skip points nobody reads: a user function or a
    random draw called at fewer points would change what the user's function sees or the
    draws' stream."""
    if isinstance(op, ops.RegionOp):
        return all(pure(m) for m in op.body)
    return not isinstance(op, _EFFECTS)


def _reads_all(sdg: SDG, e: Edge, executed: dict[str, isl.Set]) -> bool:
    """Whether read `e` surely takes every executed point of its source: a same-point read
    (no condition) by a reader over the same domain that runs wherever the source does
    (a cheap test that spares the isl images for most edges)."""
    from tempo.schedule.isl_program import stmt_name

    src, sink = sdg.ops[e.src.op_id], sdg.ops[e.sink]
    if e.cond is not None or [v.name for v in src.domain.variables] != \
            [v.name for v in sink.domain.variables]:
        return False
    if not all(isinstance(m, Symbol) and m.name == v.name
               for m, v in zip(e.expr, src.domain.variables)):
        return False
    return executed[stmt_name(e.src.op_id)].is_subset(
        executed[stmt_name(e.sink)].set_tuple_name(stmt_name(e.src.op_id)))
