"""From a loop tree to isl: each op's schedule as an affine time vector, an exact check
that every dependence goes forward in time, frees placed at the last use of each point
(isl's lexmax over the readers' times), and isl's AST of the whole.

isl does the exact work here (relations, lexmax, code generation); it is not asked to
search for an order, which is what grew super-linearly with program size."""

from __future__ import annotations

import islpy as isl

from tempo.core.domain import Domain
from tempo.core.index_expr import Slice
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.schedule.isl_program import (
    SRC_SUFFIX,
    Analysis,
    stmt_name,
)
from tempo.schedule.loop_ast import Lowering, Shifts, Terms
from tempo.schedule.loop_tree import (
    Leaf,
    LoopNode,
    Signs,
    SignsFn,
    TreeNode,
    const_value,
    syntactic_signs,
)
from tempo.schedule.tree import Node


class NotVerified(Exception):
    """isl found a dependence the loop tree's order breaks (a scheduler bug guard)."""


class EdgeSigns:
    """Signs of an edge's distance along a dimension, over the pairs whose distance along
    the enclosing loops `outer` is zero (the pairs a loop at that level must order): from
    syntax when obvious, else exactly from the edge's isl relation.

    Conditioning on `outer` is what orders a read split by a guard, e.g. the parameters of
    per-step updates over (i, t), `p[i, t] = f(p[i, t-1])` but `p[i, 0] = f(p[i-1, T-1])`:
    along t the distance is +1 or -(T-1), but inside the loop over i only the +1 remains."""

    def __init__(self, sdg: SDG, an: Analysis) -> None:
        self.sdg, self.an = sdg, an
        self._maps: dict[tuple[str, str, str | None, str, tuple[str, ...]], isl.Map] = {}
        self._rels: dict[int, isl.UnionMap] = {}

    def __call__(self, e: Edge, var: str, outer: tuple[str, ...] = ()) -> Signs:
        src = self.sdg.ops[e.src.op_id]
        names = [v.name for v in src.domain.variables]
        k = names.index(var)
        s = syntactic_signs(src.domain.variables[k], e.expr[k])
        # One sign from syntax is exact (on the pairs that remain); several may shrink on
        # the points that really run and on those the outer loops leave.
        return s if s is not None and len(s) == 1 else self._exact(e, var, outer)

    def _exact(self, e: Edge, var: str, outer: tuple[str, ...]) -> Signs:
        src, sink = self.sdg.ops[e.src.op_id], self.sdg.ops[e.sink]
        rel = self._relation(e)
        out = set()
        for sign, cmp in (("-", "<"), ("0", "="), ("+", ">")):
            m = self._compare(src.domain, sink.domain, var, cmp, outer)
            m = m.set_tuple_name(isl.dim_type.in_, stmt_name(src.op_id)).set_tuple_name(
                isl.dim_type.out, stmt_name(sink.op_id))
            if not rel.intersect(isl.UnionMap.from_map(m)).is_empty():
                out.add(sign)
        return frozenset(out)  # empty: no pair of this read ever runs

    def distance(self, e: Edge, var: str, outer: tuple[str, ...] = ()) -> int | None:
        """The least (sink - source) along `var` over the executed pairs of `e` at distance
        0 along `outer` (None: no pair, or unbounded): how far a shifted placement must
        delay the reader. From syntax for a point or a constant window, else from isl."""
        src, sink = self.sdg.ops[e.src.op_id], self.sdg.ops[e.sink]
        names = [v.name for v in src.domain.variables]
        v = src.domain.variables[names.index(var)]
        m = e.expr[names.index(var)]
        top = m.stop - 1 if isinstance(m, Slice) else m
        c = const_value(v - top) if e.cond is None else None  # exact, or conservative
        if c is not None:
            return c
        pairs = self._relation(e)
        if outer:
            m2 = self._compare(src.domain, sink.domain, None, "", outer)
            pairs = pairs.intersect(isl.UnionMap.from_map(
                m2.set_tuple_name(isl.dim_type.in_, stmt_name(src.op_id)).set_tuple_name(
                    isl.dim_type.out, stmt_name(sink.op_id))))
        if pairs.is_empty():
            return None
        lhs = ", ".join(u.name + SRC_SUFFIX for u in src.domain.variables)
        rhs = ", ".join(u.name for u in sink.domain.variables)
        diff = isl.UnionMap(f"{self.an.decl} -> {{ [{stmt_name(src.op_id)}[{lhs}] -> "
                            f"{stmt_name(sink.op_id)}[{rhs}]] -> [{var} - {var}{SRC_SUFFIX}] }}")
        val = isl.Set.from_union_set(pairs.wrap().apply(diff)).dim_min_val(0)
        return int(val.to_python()) if val.is_int() else None

    def _relation(self, e: Edge) -> isl.UnionMap:
        rel = self._rels.get(id(e))
        if rel is None:
            src, sink = self.sdg.ops[e.src.op_id], self.sdg.ops[e.sink]
            rel = self.an.edge_maps[id(e)].intersect_domain(
                isl.UnionSet.from_set(self.an.executed[stmt_name(src.op_id)])).intersect_range(
                isl.UnionSet.from_set(self.an.executed[stmt_name(sink.op_id)]))
            self._rels[id(e)] = rel
        return rel

    def _compare(self, src: Domain, sink: Domain, var: str | None, cmp: str,
                 outer: tuple[str, ...]) -> isl.Map:
        """`{ A[src] -> B[sink] : var cmp var' and w = w' (w in outer) }` (no constraint on
        a `var` of None), parsed once per shape."""
        key = (repr(src), repr(sink), var, cmp, outer)
        if key not in self._maps:
            lhs = ", ".join(v.name + SRC_SUFFIX for v in src.variables)
            rhs = ", ".join(v.name for v in sink.variables)
            cond = " and ".join([*([f"{var} {cmp} {var}{SRC_SUFFIX}"] if var else []),
                                 *(f"{w} = {w}{SRC_SUFFIX}" for w in outer)]) or "true"
            self._maps[key] = isl.Map(f"{self.an.decl} -> {{ A[{lhs}] -> B[{rhs}] : "
                                      f"{cond} }}")
        return self._maps[key]


def _depth(nodes: list[TreeNode]) -> int:
    return max((1 + _depth(n.body) for n in nodes if isinstance(n, LoopNode)), default=0)


def op_times(tree: list[TreeNode], shifts: Shifts | None = None) -> dict[int, Terms]:
    """Each op's time vector terms: sequence positions (ints) and loops (var, direction),
    or (var, direction, shift) for an op whose point p runs in iteration p + shift."""
    out: dict[int, Terms] = {}
    shifts = shifts or {}

    def walk(nodes: list[TreeNode], prefix: Terms) -> None:
        for k, n in enumerate(nodes):
            if isinstance(n, Leaf):
                own = shifts.get(n.op_id, {})
                out[n.op_id] = [t if isinstance(t, int) or not own.get(t[0])
                                else (t[0], t[1], own[t[0]]) for t in [*prefix, k]]
            else:
                walk(n.body, [*prefix, k, (n.var, n.direction)])

    walk(tree, [])
    return out


def _time_text(terms: Terms, width: int) -> str:
    parts = [str(t) if isinstance(t, int) else
             (t[0] if t[1] > 0 else f"-{t[0]}") + (f" + {t[2]}" if len(t) > 2 else "")
             for t in terms]
    return ", ".join(parts + ["0"] * (width - len(parts)))


def place(sdg: SDG, an: Analysis, tree: list[TreeNode], stored: list[TensorId],
          signs: SignsFn, shifts: Shifts | None = None) -> Node:
    """Each op's time vector, checked against every dependence; then our schedule tree with
    loop bounds, guards and frees at last use."""
    times = op_times(tree, shifts)
    sched_op = TimeMaps(sdg, an, times, 2 * _depth(tree) + 1)
    _verify(sdg, an, times, sched_op, signs)
    low = Lowering(sdg, an, tree, times, sched_op, shifts or {})
    low.place_frees(stored)
    return low.lower()


class TimeMaps(dict[int, isl.UnionMap]):
    """op → isl map from its executed points to their times, built when first asked for
    (most ops are ordered and freed without one)."""

    def __init__(self, sdg: SDG, an: Analysis, times: dict[int, Terms], width: int) -> None:
        super().__init__()
        self.sdg, self.an, self.times, self.width = sdg, an, times, width

    def __missing__(self, o: int) -> isl.UnionMap:
        op = self.sdg.ops[o]
        vars_ = ", ".join(v.name for v in op.domain.variables)
        m = isl.UnionMap(f"{self.an.decl} -> {{ {stmt_name(o)}[{vars_}] -> "
                         f"[{_time_text(self.times[o], self.width)}, 0] }}")
        m = m.intersect_domain(isl.UnionSet.from_set(self.an.executed[stmt_name(o)]))
        self[o] = m
        return m


def _verify(sdg: SDG, an: Analysis, times: dict[int, Terms],
            sched_op: TimeMaps, signs: SignsFn) -> None:
    """Every dependence pair must run source-first under the computed times. Along the
    loops both ends share, a distance that is never negative (in the loop's direction)
    and positive somewhere, or zero everywhere with the source earlier in the body, proves
    it from the distances' signs; anything else is checked by isl on the exact relation."""
    later: isl.UnionMap | None = None
    for sink in times:
        for e in sdg.in_edges[sink]:
            if e.src.op_id not in times or _ordered(times[e.src.op_id], times[sink], e, signs):
                continue
            pairs = an.edge_maps[id(e)].apply_domain(sched_op[e.src.op_id]).apply_range(
                sched_op[sink])
            if pairs.is_empty():
                continue
            if later is None:
                space = isl.Set.from_union_set(pairs.domain()).get_space()
                later = isl.UnionMap.from_map(isl.Map.lex_lt(space))
            if not pairs.is_subset(later):
                raise NotVerified(f"the read of op {e.src.op_id} by op {sink} runs backwards")


def _ordered(src: Terms, sink: Terms, e: Edge, signs: SignsFn) -> bool:
    outer: tuple[str, ...] = ()  # shared loops so far, on whose zero distance we go on
    for a, b in zip(src, sink):
        if a != b:
            return isinstance(a, int) and isinstance(b, int) and a < b
        if isinstance(a, tuple):
            s = signs(e, a[0], outer)
            outer = (*outer, a[0])
            bad, good = ("-", "+") if a[1] > 0 else ("+", "-")
            if bad in s:
                return False
            if "0" not in s:
                return good in s
    return False
