"""Grouping ops into isl statements: ops that run over the same points and read each other
at the same point execute together, in dependence order, as one statement. isl then orders
tens of groups instead of hundreds of ops (its scheduler grows steeply with statements),
and the generated code is unchanged: a group expands back into its ops.

A merge is only allowed when it cannot close a same-point cycle through other groups
(A → X → B with A, B grouped and X outside would make the group wait on itself)."""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from tempo.core.index_expr import Slice, Symbol
from tempo.core.sdg import SDG, Edge


@dataclass
class Groups:
    """rep op id → member op ids in execution order; op id → its group's rep."""

    members: dict[int, list[int]] = field(default_factory=dict)
    rep_of: dict[int, int] = field(default_factory=dict)


def is_basis(e: Edge, sdg: SDG) -> bool:
    src, sink = sdg.ops[e.src.op_id], sdg.ops[e.sink]
    if [v.name for v in src.domain.variables] != [v.name for v in sink.domain.variables]:
        return False
    return all(isinstance(m, Symbol) and m.name == v.name
               for m, v in zip(e.expr, src.domain.variables))


def _maybe_same_point(e: Edge, sdg: SDG) -> bool:
    """Structural over-approximation: can the sink read the source at its own point?"""
    sink = sdg.ops[e.sink]
    for v, m in zip(sdg.ops[e.src.op_id].domain.variables, e.expr):
        if not sink.domain.has_dim(v) or isinstance(m, Slice):
            continue
        if isinstance(m, Symbol):
            if m.name != v.name:
                return True
            continue
        lin = m - v
        c = lin.try_eval() if hasattr(lin, "try_eval") else None
        if isinstance(c, int) and c != 0:
            return False  # a fixed shift in time: never the same point
    return True


def group_ops(sdg: SDG, executed: dict[int, isl.Set]) -> Groups:
    """Union ops along same-point basis edges between equal executed domains, as long as
    no same-point path leaves the group and comes back."""
    parent = {i: i for i in sdg.ops}
    executed = {i: d.set_tuple_name("P") for i, d in executed.items()}  # compare points only

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    succ: dict[int, set[int]] = {i: set() for i in sdg.ops}
    for es in sdg.in_edges.values():
        for e in es:
            if e.src.op_id != e.sink and _maybe_same_point(e, sdg):
                succ[e.src.op_id].add(e.sink)
    gsucc: dict[int, set[int]] = {i: set(s) for i, s in succ.items()}

    def reaches_avoiding_direct(a: int, b: int) -> bool:
        """Is there a path a ⇝ b (group reps) through at least one other group?"""
        stack = [x for x in gsucc[a] if x != b and x != a]
        seen = set(stack)
        while stack:
            x = stack.pop()
            for y in gsucc[x]:
                if y == b:
                    return True
                if y not in seen and y != a:
                    seen.add(y)
                    stack.append(y)
        return False

    for sink_id in sorted(sdg.ops):
        for e in sdg.in_edges[sink_id]:
            a, b = find(e.src.op_id), find(sink_id)
            if a == b or not is_basis(e, sdg):
                continue
            if not executed[e.src.op_id].is_equal(executed[sink_id]):
                continue
            if a in gsucc[b] or reaches_avoiding_direct(a, b) or reaches_avoiding_direct(b, a):
                continue
            parent[b] = a
            gsucc[a] = {find(x) for x in gsucc[a] | gsucc.pop(b)} - {a}
            for x in gsucc:
                gsucc[x] = {find(y) for y in gsucc[x]} - {x}

    groups = Groups()
    by_rep: dict[int, list[int]] = {}
    for i in sorted(sdg.ops):
        by_rep.setdefault(find(i), []).append(i)
    for rep, ms in by_rep.items():
        groups.members[rep] = _order(sdg, ms)
        for m in ms:
            groups.rep_of[m] = rep
    return groups


def _order(sdg: SDG, members: list[int]) -> list[int]:
    """Members in dependence order along their same-point internal edges (Kahn)."""
    inside = set(members)
    indeg = {m: 0 for m in members}
    outs: dict[int, list[int]] = {m: [] for m in members}
    for m in members:
        for e in sdg.in_edges[m]:
            if e.src.op_id in inside and e.src.op_id != m and is_basis(e, sdg):
                indeg[m] += 1
                outs[e.src.op_id].append(m)
    ready = sorted(m for m in members if indeg[m] == 0)
    order: list[int] = []
    while ready:
        m = ready.pop(0)
        order.append(m)
        for s in outs[m]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
        ready.sort()
    if len(order) != len(members):  # a same-point cycle inside: let isl report it
        return sorted(members)
    return order
