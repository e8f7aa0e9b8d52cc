"""Where each op runs: its full domain minus the points whose reads would land outside a
source's domain (directly, or on a point the source itself cannot compute). Dropped points
must not be needed by a consumer (under its edge condition) or a side effect."""

from __future__ import annotations

import islpy as isl

from tempo.core import ops
from tempo.core.sdg import SDG, TensorId


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
    """Ops that only feed recurrence branches (directly or through such ops) run only where
    a branch takes them; returns them. `s[True] = f(s.previous)` then never computes f at
    t = 0, where it would read the future s[T-1] and no affine schedule could order it."""
    from tempo.schedule.isl_program import stmt_name

    restricted: set[int] = set()
    for op in reversed(list(sdg.topological())):
        outs = sdg.out_edges.get(op.op_id, [])
        if (not outs or isinstance(op, ops.MergeOp | ops.SinkUDFOp | ops.BarrierOp)
                or any(TensorId(op.op_id, k) in sdg.keep for k in range(op.num_outputs))):
            continue
        if not all(isinstance(sdg.ops[e.sink], ops.MergeOp) or e.sink in restricted
                   for e in outs):
            continue
        name = stmt_name(op.op_id)
        needed = executed[name].subtract(executed[name])
        for e in outs:
            sink_dom = isl.UnionSet.from_set(executed[stmt_name(e.sink)])
            img = edge_maps[id(e)].intersect_range(sink_dom).domain()
            if not img.is_empty():
                needed = needed.union(isl.Set.from_union_set(img))
        executed[name] = executed[name].intersect(needed)
        restricted.add(op.op_id)
    return restricted
