"""Grouping ops into isl statements: ops that run over the same points and read each other
at the same point execute together, in dependence order, as one statement. isl then orders
tens of groups instead of hundreds of ops (its scheduler grows steeply with statements),
and the generated code is unchanged: a group expands back into its ops.

Two groups are joined only when no path that could come back to the same point leads
from one to the other through a third (A → X → B with A, B joined and X outside would
make the group wait on itself); `zero_distance_oracle` decides which paths could."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import islpy as isl

from tempo.core import naming
from tempo.core.errors import ScheduleError
from tempo.core.index_expr import IntIndexValue, Slice, Symbol
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


INF = float("inf")


def _distance(v: Symbol, m: object) -> tuple[float, float]:
    """Interval of (sink - source) coordinate along `v` for a read member `m`."""
    if isinstance(m, Symbol) and m.name == v.name:
        return (0, 0)
    if isinstance(m, Slice):
        d_hi = _const(v - m.start)
        d_lo = _const(v - m.stop + 1)
        return (-INF if d_lo is None else d_lo, INF if d_hi is None else d_hi)
    assert isinstance(m, IntIndexValue), m  # a point read: an integer index
    c = _const(v - m)
    return (c, c) if c is not None else (-INF, INF)


def _const(e: object) -> int | None:
    val = e.try_eval() if hasattr(e, "try_eval") else None
    return val if isinstance(val, int) and not isinstance(val, bool) else None


def zero_distance_oracle(
    sdg: SDG,
) -> tuple[Callable[[Edge], bool], Callable[[Edge], dict[str, tuple[float, float]]]]:
    """Can a path through this edge return to its starting point? Per variable, if every
    read in the program looks only backwards (or only forwards) along it, a path sums to
    zero only over edges of distance 0; where directions mix, any edge may (conservative)."""
    intervals: dict[int, dict[str, tuple[float, float]]] = {}
    lows: dict[str, float] = {}
    highs: dict[str, float] = {}
    for es in sdg.in_edges.values():
        for e in es:
            sink = sdg.ops[e.sink]
            iv = {}
            for v, m in zip(sdg.ops[e.src.op_id].domain.variables, e.expr):
                if sink.domain.has_dim(v):
                    iv[v.name] = _distance(v, m)
                    lows[v.name] = min(lows.get(v.name, INF), iv[v.name][0])
                    highs[v.name] = max(highs.get(v.name, -INF), iv[v.name][1])
            intervals[id(e)] = iv
    monotone = {n for n in lows if lows[n] >= 0 or highs[n] <= 0}

    def maybe_zero(e: Edge) -> bool:
        for n, (lo, hi) in intervals[id(e)].items():
            if n in monotone and not lo <= 0 <= hi:
                return False
        return True

    return maybe_zero, lambda e: intervals[id(e)]


def group_ops(sdg: SDG, executed: dict[int, isl.Set]) -> Groups:
    """Union ops along same-point basis edges between equal executed domains, as long as
    no path that may return to the same point leaves one side and reaches the other."""
    parent = {i: i for i in sdg.ops}
    executed = {i: d.set_tuple_name("P") for i, d in executed.items()}  # compare points only

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    maybe_zero, interval_of = zero_distance_oracle(sdg)
    gsucc: dict[int, set[int]] = {i: set() for i in sdg.ops}  # reads that may return
    fsucc: dict[int, set[int]] = {i: set() for i in sdg.ops}  # every read
    cut: set[str] = set()  # variables along which some read was left out of gsucc
    for es in sdg.in_edges.values():
        for e in es:
            if e.src.op_id == e.sink:
                continue
            fsucc[e.src.op_id].add(e.sink)
            if maybe_zero(e):
                gsucc[e.src.op_id].add(e.sink)
            else:
                cut.update(n for n, (lo, hi) in interval_of(e).items() if not lo <= 0 <= hi)
    # gsucc leaves out reads moving along a variable every read moves the same way: a path
    # through one cannot come back along it — unless it passes an op without that variable
    # (a sum over t, read back at every t), where its coordinate is lost. Such joins are
    # decided on every read (`escapes`); a group lacking a cut variable is such an op.
    escape = {i for i, op in sdg.ops.items()
              if not cut <= {v.name for v in op.domain.variables}}
    members: dict[int, list[int]] = {i: [i] for i in sdg.ops}
    signs: dict[int, dict[str, set[str]]] = {i: {} for i in sdg.ops}

    def joined_signs(a: int, b: int) -> dict[str, set[str]] | None:
        """Directions of the group's reads of itself after joining a and b; None when
        some variable would be read both forwards and backwards (no order exists)."""
        out = {v: set(d) for v, d in signs[a].items()}
        for v, d in signs[b].items():
            out.setdefault(v, set()).update(d)
        in_b = set(members[b])
        in_a = set(members[a])
        for m in members[a] + members[b]:
            for e in sdg.in_edges[m]:
                src = e.src.op_id
                crosses = (m in in_a and src in in_b) or (m in in_b and src in in_a)
                if not crosses or is_basis(e, sdg):
                    continue
                for v, (lo, hi) in interval_of(e).items():
                    if lo < 0:
                        out.setdefault(v, set()).add("-")
                    if hi > 0:
                        out.setdefault(v, set()).add("+")
        return None if any(len(d) > 1 for d in out.values()) else out

    for sink_id in sorted(sdg.ops):
        for e in sdg.in_edges[sink_id]:
            a, b = find(e.src.op_id), find(sink_id)
            if a == b or not is_basis(e, sdg):
                continue
            if not executed[e.src.op_id].is_equal(executed[sink_id]):
                continue
            if a in gsucc[b] or detour(gsucc, a, b) or detour(gsucc, b, a):
                continue
            if escape and (escapes(fsucc, escape, a, b) or escapes(fsucc, escape, b, a)):
                continue
            joined = joined_signs(a, b)
            if joined is None:
                continue
            signs[a] = joined
            members[a] += members.pop(b)
            parent[b] = a
            for g in (gsucc, fsucc):
                g[a] = {find(x) for x in g[a] | g.pop(b)} - {a}
                for x in g:
                    g[x] = {find(y) for y in g[x]} - {x}
            if b in escape:
                escape.add(a)

    groups = Groups()
    by_rep: dict[int, list[int]] = {}
    for i in sorted(sdg.ops):
        by_rep.setdefault(find(i), []).append(i)
    for rep, ms in by_rep.items():
        groups.members[rep] = sorted(ms)
        for m in ms:
            groups.rep_of[m] = rep
    return groups


def order_members(sdg: SDG, members: list[int], same_point: Callable[[Edge], bool]) -> list[int]:
    """Members in dependence order along the internal edges that can read a member at the
    group's own point (basis reads, and slices or clamps that include it): Kahn's order."""
    inside = set(members)
    indeg = {m: 0 for m in members}
    outs: dict[int, list[int]] = {m: [] for m in members}
    for m in members:
        for e in sdg.in_edges[m]:
            if e.src.op_id in inside and e.src.op_id != m and same_point(e):
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
    if len(order) != len(members):
        stuck = [sdg.ops[m] for m in members if indeg[m] > 0]
        names = "; ".join(naming.op_label(op, sdg.names) for op in stuck)
        raise ScheduleError(
            f"no schedule orders these ops: they depend on each other at the same point: {names}"
        )
    return order


def detour(succ: dict[int, set[int]], a: int, b: int) -> bool:
    """Is there a path a ⇝ b in `succ` (group representatives) through at least one other
    group? Joining a and b would then put that group both after and before them."""
    stack = [x for x in succ[a] if x not in (a, b)]
    seen = set(stack)
    while stack:
        for y in succ[stack.pop()]:
            if y == b:
                return True
            if y not in seen and y != a:
                seen.add(y)
                stack.append(y)
    return False


def escapes(succ: dict[int, set[int]], escape: set[int], a: int, b: int) -> bool:
    """Is there a path a ⇝ b in `succ` through at least one other group, one of whose
    groups (a or b included) is in `escape`? (Depth first over (group, escaped yet).)"""
    start = a in escape or b in escape
    stack = [(x, start or x in escape) for x in succ[a] if x not in (a, b)]
    seen = set(stack)
    while stack:
        x, esc = stack.pop()
        for y in succ[x]:
            if y == b:
                if esc:
                    return True
                continue
            state = (y, esc or y in escape)
            if y != a and state not in seen:
                seen.add(state)
                stack.append(state)
    return False
