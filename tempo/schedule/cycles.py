"""Finding the ops of a same-point dependence cycle, so a ScheduleError can name them."""

from __future__ import annotations

import islpy as isl

from tempo.core.sdg import SDG, Edge
from tempo.schedule.isl_program import SRC_SUFFIX, IslProgram, _params_decl, edge_relation_str


def _same_point(sdg: SDG, e: Edge, prog: IslProgram) -> bool:
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


def same_point_cycle(sdg: SDG, prog: IslProgram) -> list[int]:
    """Op ids of one strongly connected component of same-point edges (empty if none)."""
    succ: dict[int, set[int]] = {i: set() for i in sdg.ops}
    for edges in sdg.in_edges.values():
        for e in edges:
            if _same_point(sdg, e, prog):
                succ[e.src.op_id].add(e.sink)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    found: list[list[int]] = []

    def visit(v: int) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in succ[v]:
                found.append(sorted(comp))

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return found[0] if found else []
