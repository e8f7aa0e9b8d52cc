"""Finding the ops of a same-point dependence cycle, so a ScheduleError can name them."""

from __future__ import annotations

import islpy as isl

from tempo.core.sdg import SDG, Edge
from tempo.schedule.isl_program import (
    SRC_SUFFIX,
    Analysis,
    IslProgram,
    _params_decl,
    edge_relation_str,
)


def _same_point(sdg: SDG, e: Edge, prog: IslProgram | Analysis) -> bool:
    """Can the sink read the source at its own point (equal shared coordinates)?"""
    sink, src = sdg.ops[e.sink], sdg.ops[e.src.op_id]
    rel = isl.Map(edge_relation_str(sdg, e, _params_decl(prog.params))).intersect_params(
        prog.context
    )
    shared = [v for v in src.domain.variables if sink.domain.has_dim(v)]
    if not shared:
        return not rel.is_empty()
    eq = " and ".join(f"{v.name}{SRC_SUFFIX} = {v.name}" for v in shared)
    lhs = ", ".join(v.name + SRC_SUFFIX for v in src.domain.variables)
    rhs = ", ".join(v.name for v in sink.domain.variables)
    same = isl.Map(
        f"{_params_decl(prog.params)} -> {{ S{src.op_id}[{lhs}] -> S{sink.op_id}[{rhs}] : {eq} }}"
    )
    return not rel.intersect(same).is_empty()


def same_point_cycle(sdg: SDG, prog: IslProgram | Analysis) -> list[int]:
    """Op ids of one strongly connected component of same-point edges (empty if none)."""
    succ: dict[int, set[int]] = {i: set() for i in sdg.ops}
    for edges in sdg.in_edges.values():
        for e in edges:
            if _same_point(sdg, e, prog):
                succ[e.src.op_id].add(e.sink)
    from tempo.schedule.loop_tree import strongly_connected

    order = {v: sorted(ws) for v, ws in succ.items()}
    for comp in strongly_connected(sorted(succ), order):
        if len(comp) > 1 or comp[0] in succ[comp[0]]:
            return sorted(comp)
    return []


def definite_cycle(sdg: SDG, an: Analysis, op_ids: list[int]) -> list[int]:
    """Ops among `op_ids` that read each other at one and the same point, for certain: a
    cycle of identity reads whose identity parts share a point. Empty when no such cycle
    is found (the ops may still be orderable by isl's own scheduler)."""
    from tempo.schedule.grouping import is_basis
    from tempo.schedule.loop_tree import strongly_connected

    inside = set(op_ids)
    at: dict[tuple[int, int], isl.Set] = {}
    succ: dict[int, list[int]] = {o: [] for o in op_ids}
    for o in op_ids:
        for e in sdg.in_edges[o]:
            s = e.src.op_id
            if s not in inside or not is_basis(e, sdg):
                continue
            m = isl.Map.from_union_map(an.edge_maps[id(e)])
            m = m.set_tuple_name(isl.dim_type.in_, "P").set_tuple_name(isl.dim_type.out, "P")
            pts = m.intersect(isl.Map.identity(m.get_space())).domain()
            pts = pts.intersect(an.executed[f"S{o}"].set_tuple_name("P"))
            if not pts.is_empty():
                at[(s, o)] = pts
                succ[s].append(o)
    for comp in strongly_connected(sorted(inside), succ):
        cyc = _simple_cycle(comp, succ)
        if not cyc:
            continue
        common = at[(cyc[-1], cyc[0])]
        for a, b in zip(cyc, cyc[1:]):
            common = common.intersect(at[(a, b)])
        if not common.is_empty():
            return cyc
    return []


def _simple_cycle(comp: list[int], succ: dict[int, list[int]]) -> list[int]:
    """One cycle through the first node of a strongly connected component (path order)."""
    members = set(comp)
    start = comp[0]
    if len(comp) == 1:
        return [start] if start in succ[start] else []
    parent: dict[int, int] = {}
    stack = [start]
    while stack:
        v = stack.pop()
        for w in succ[v]:
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return path[::-1]
            if w in members and w not in parent:
                parent[w] = v
                stack.append(w)
    return []
