"""The reverse of one read edge, computed exactly by isl: for each source point p, the set of
sink points that read it, as pieces `(condition on p, index sequence over the sink domain)`.

A piece's members are points (single-valued reverse: shifts, `max(t-1,0)`, constants) or
slices (several readers: broadcast dims, slices read by many sinks). Each piece is checked
to equal its part of the relation, so the gradient is exact at every boundary (ARCH §8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import islpy as isl

from tempo.core import index_expr as ie
from tempo.core.domain import Domain
from tempo.core.errors import IndexExprError
from tempo.core.index_expr import from_isl_ast_expr, from_isl_pw_aff, isl_pieces

_Q = "__q"


@dataclass(frozen=True)
class Piece:
    """Sources p with `cond(p)` (None: every source point) are read by sinks `members(p)`."""

    cond: ie.BooleanIndexValue | None
    members: tuple[ie.IndexAtom, ...]


def _qvar(v: ie.Symbol) -> ie.Symbol:
    return ie.Symbol(v.name + _Q, False, v.idx)


def _int_cons(lhs: str, op: str, e: ie.IntIndexValue) -> str:
    """`lhs op e` in isl syntax, with the piecewise parts of `e` as a disjunction."""
    parts = []
    for cond, val in isl_pieces(e):
        c = f"{lhs} {op} ({val})"
        parts.append(c if cond is None else f"(({cond}) and {c})")
    return "(" + " or ".join(parts) + ")"


def _bool_isl(c: ie.BooleanIndexValue) -> str:
    return f"({c.to_isl()})"


def _domain_cons(dom: Domain, rename: dict[ie.Symbol, ie.Symbol] | None = None) -> list[str]:
    out = []
    for v in dom.variables:
        name = rename[v].name if rename else v.name
        out.append(f"0 <= {name}")
        out.append(_int_cons(name, "<", ie.lift_to_int_ie(dom.bound_of(v))))
    return out


def _params(exprs: Sequence[ie.IndexExpr], doms: Sequence[Domain]) -> dict[str, ie.Symbol]:
    """Every bound symbol the domains (variables' bounds and bound expressions) and the
    expressions use: the isl parameters of a relation. Passing the universe among `doms`
    gives every relation of one backward pass the same parameter space."""
    found: dict[str, ie.Symbol] = {}
    for d in doms:
        for v in d.variables:
            b = v.as_bound()
            found[b.name] = b
        for p in d.parameters:
            found[p.name] = p
    for e in exprs:
        for s in e.bound_symbols_used():
            found[s.name] = s
    return found


def isl_text(params: Sequence[str], space: str, cons: Sequence[str]) -> str:
    """`[params] -> { space : c1 and c2 ... }`, every bound parameter at least 1 (a bound
    is a positive size), valid isl text even with no parameters or no constraints."""
    allc = [f"{p} >= 1" for p in params] + [c for c in cons if c]
    body = f"{space} : {' and '.join(allc)}" if allc else space
    return f"[{', '.join(params)}] -> {{ {body} }}"


def relation_str(
    src: Domain, sink: Domain, expr: ie.IndexSequence, cond: ie.BooleanIndexValue | None,
    bound_src: bool = True, universe: Domain | None = None,
) -> tuple[str, dict[str, ie.Symbol]]:
    """`{ X[p] -> S[q] : q in sink, p in src, cond(q), p in expr(q) }` and its parameters."""
    qmap = {v: _qvar(v) for v in sink.variables}
    exprs: list[ie.IndexExpr] = [expr] + ([cond] if cond is not None else [])
    params = _params(exprs, [src, sink] + ([universe] if universe is not None else []))
    cons: list[str] = []
    cons += (_domain_cons(src) if bound_src else []) + _domain_cons(sink, qmap)
    if cond is not None:
        cons.append(_bool_isl(ie.lift_to_bool_ie(cond.remap(qmap))))
    for v, m in zip(src.variables, expr):
        if isinstance(m, ie.Slice):
            cons.append(_int_cons(v.name, ">=", ie.lift_to_int_ie(m.start.remap(qmap))))
            cons.append(_int_cons(v.name, "<", ie.lift_to_int_ie(m.stop.remap(qmap))))
        else:
            cons.append(_int_cons(v.name, "=", ie.lift_to_int_ie(m.remap(qmap))))
    lhs = f"X[{', '.join(v.name for v in src.variables)}]"
    rhs = f"S[{', '.join(qmap[v].name for v in sink.variables)}]"
    return isl_text(list(params), f"{lhs} -> {rhs}", cons), params


def _flat(s: isl.Set) -> isl.Set:
    """A set over p as a parameter-only set (p becomes parameters), for AST building."""
    n_par, n = s.dim(isl.dim_type.param), s.dim(isl.dim_type.set)
    return s.move_dims(isl.dim_type.param, n_par, isl.dim_type.set, 0, n)


def _cond_of(s: isl.Set, context: isl.Set, symbols: dict[str, ie.Symbol]) -> ie.BooleanIndexValue:
    build = isl.AstBuild.from_context(_flat(context))
    out = from_isl_ast_expr(build.expr_from_set(_flat(s)), symbols)
    assert isinstance(out, ie.BooleanIndexValue)
    return out


def reverse_edge(
    src: Domain, sink: Domain, expr: ie.IndexSequence, cond: ie.BooleanIndexValue | None,
    valid: isl.Set | None = None, universe: Domain | None = None,
) -> list[Piece]:
    """The exact reverse of "sink at q reads src at expr(q) where cond(q)" as disjoint pieces,
    restricted to the sink points `valid` where the sink op runs (all its reads in range).
    `valid` may use any bound of `universe` (a sink over () still runs only where its reads
    of `x[0:8]` fit in `T`): pass the universe so that those bounds are parameters here too."""
    text, params = relation_str(src, sink, expr, cond, universe=universe)
    try:
        rel = isl.Map(text)
    except isl.Error as exc:
        raise IndexExprError(f"cannot reverse the read [{expr}] (not quasi-affine)") from exc
    if valid is not None:
        missing = _param_names(valid) - set(params)
        if missing:
            raise IndexExprError(f"the read [{expr}] runs where bounds {sorted(missing)} hold, "
                                 "which the relation does not declare (pass the universe)")
        rel = rel.intersect_range(valid)
    symbols: dict[str, ie.Symbol] = dict(params)
    symbols.update({v.name: v for v in src.variables})
    full = isl.Set(isl_text(list(params), _tuple("X", src.variables), _domain_cons(src)))
    pieces = []
    for bm in rel.coalesce().make_disjoint().get_basic_maps():
        for m in _affine_parts(isl.Map.from_basic_map(bm)):
            pieces.append(_piece(m, full, symbols, src, sink, text))
    return pieces


def _tuple(name: str, variables: Sequence[ie.Symbol]) -> str:
    return f"{name}[{', '.join(v.name for v in variables)}]"


def point_set(dom: Domain, cond: ie.BooleanIndexValue | None, universe: Domain,
              name: str = "S") -> isl.Set:
    """The points of `dom` where `cond` holds (all of them for None), as an isl set over
    every bound of `universe`: the sets of one backward pass compare directly."""
    params = _params([cond] if cond is not None else [], [dom, universe])
    cons = _domain_cons(dom) + ([_bool_isl(ie.lift_to_bool_ie(cond))] if cond is not None else [])
    return isl.Set(isl_text(list(params), _tuple(name, dom.variables), cons))


def _param_names(s: isl.Set) -> set[str]:
    return {str(s.get_dim_name(isl.dim_type.param, k)) for k in range(s.dim(isl.dim_type.param))}


def _affine_parts(m: isl.Map) -> list[isl.Map]:
    """`m` split by source points until every sink dim's min and max is one affine function
    (the scheduler reads plain affine expressions, not piecewise ones)."""
    dom = m.domain()
    for j in range(m.dim(isl.dim_type.out)):
        for pw in (m.dim_min(j).gist(dom), m.dim_max(j).gist(dom)):
            parts = pw.get_pieces()
            if len(parts) > 1:
                out = []
                for part_dom, _ in parts:
                    sub = m.intersect_domain(part_dom)
                    if not sub.is_empty():
                        out += _affine_parts(sub)
                return out
    return [m]


def _piece(m: isl.Map, full: isl.Set, symbols: dict[str, ie.Symbol], src: Domain,
           sink: Domain, text: str) -> Piece:
    """One disjoint part of the reverse as (condition, members), checked by rebuilding its
    relation from the index expressions: any rounding in the conversion back from isl is an
    error here, never a silently widened or narrowed gradient."""
    dom = m.domain()
    members: list[ie.IndexAtom] = []
    box: list[str] = []
    for j, v in enumerate(sink.variables):
        lo, hi = m.dim_min(j).gist(dom), m.dim_max(j).gist(dom)
        lo_e, hi_e = from_isl_pw_aff(lo, symbols), from_isl_pw_aff(hi, symbols)
        q = _qvar(v).name
        if dom.is_subset(lo.eq_set(hi)):
            members.append(lo_e)
            box.append(_int_cons(q, "=", lo_e))
        else:
            members.append(ie.slice_(lo_e, hi_e + 1))
            box += [_int_cons(q, ">=", lo_e), _int_cons(q, "<=", hi_e)]
    cond = None if dom.is_equal(full) else _cond_of(dom, full, symbols)
    params = sorted(_param_names(full))
    space = f"{_tuple('X', src.variables)} -> {_tuple('S', [_qvar(v) for v in sink.variables])}"
    check = isl.Map(isl_text(params, space, box + ([] if cond is None else [_bool_isl(cond)])))
    if not check.intersect_domain(full).is_equal(m):
        raise IndexExprError("the points that read one element are not a contiguous range "
                             "along each dimension (e.g. `t % 2`: every other point), so its "
                             f"gradient is not a read autodiff can express (relation {text})")
    return Piece(cond, tuple(members))


class Validity:
    """Where each op runs: the points whose reads all land on points where their source runs
    (the runtime skips the others, e.g. `h[t-1] @ w` at t=0). Merges cut the recursion: a
    merge runs wherever its first true branch reads inside its source's domain."""

    def __init__(self, sdg: Any, first_wins: Any) -> None:
        self.sdg, self.first_wins = sdg, first_wins
        self.memo: dict[int, isl.Set] = {}

    def of(self, op_id: int) -> isl.Set:
        if op_id not in self.memo:
            self.memo[op_id] = self._compute(op_id)
        return self.memo[op_id]

    def everywhere(self, op_id: int) -> bool:
        """True when the op runs at every point of its domain."""
        return bool(self.of(op_id).is_equal(self._full(self.sdg.ops[op_id].domain, "S")))

    def _full(self, dom: Domain, name: str) -> isl.Set:
        """Every point of `dom`, over all bounds of the universe (each at least 1): sets of
        ops over () still carry the bounds their reads need (`x[0:8]` runs where T >= 8)."""
        return point_set(dom, None, self.sdg.universe, name)

    def _compute(self, op_id: int) -> isl.Set:
        op = self.sdg.ops[op_id]
        ok = self._full(op.domain, "S")
        is_merge = op.name == "merge"
        conds = self.first_wins(op) if is_merge else {}
        for e in self.sdg.in_edges[op_id]:
            src = self.sdg.ops[e.src.op_id]
            cond = conds.get(e.sink_in, e.cond)
            text, _ = relation_str(src.domain, op.domain, e.expr, cond, bound_src=False,
                                   universe=self.sdg.universe)
            rel = isl.Map(text)
            if is_merge or src.name == "merge":
                src_ok = self._full(src.domain, "X")
            else:
                src_ok = self.of(src.op_id).set_tuple_name("X")
            bad = rel.intersect_domain(src_ok.complement()).range()
            ok = ok.subtract(bad)
        return ok.coalesce()
