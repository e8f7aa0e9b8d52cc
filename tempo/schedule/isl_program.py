"""SDG → isl: one statement per op over its domain, one dependence map per edge, and one
free statement per stored tensor ordered after the last reader of each point.

This module only knows "op k reads tensor X at expr under cond"; op semantics stay out.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from tempo.core import naming
from tempo.core.domain import Domain
from tempo.core.errors import IndexExprError
from tempo.core.index_expr import IndexExpr, IntIndexValue, Slice, Symbol
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.schedule.domains import executed_domains
from tempo.schedule.grouping import Groups, group_ops, is_basis, order_members

SRC_SUFFIX = "__s"


def stmt_name(op_id: int) -> str:
    return f"S{op_id}"


def free_name(tid: TensorId) -> str:
    return f"F{tid.op_id}_{tid.output_id}"


@dataclass
class IslProgram:
    """The isl view of one SDG instance: parameters fixed to the compile-time bounds."""

    params: list[str]
    context: isl.Set
    domains: isl.UnionSet
    deps: isl.UnionMap
    free_deps: isl.UnionMap
    stmt_domains: dict[str, isl.Set]
    frees: dict[str, list[TensorId]]
    groups: dict[int, list[int]]
    after_group: dict[int, list[TensorId]]


def _params_decl(params: list[str]) -> str:
    return "[" + ", ".join(params) + "]"


def _domain_constraints(domain: Domain, suffix: str = "") -> list[str]:
    out = []
    for v in domain.variables:
        bound = domain.bound_of(v)
        out.append(f"0 <= {v.name}{suffix}")
        out.append(relate(f"{v.name}{suffix}", "<", bound, suffix))
    return out


def _isl(expr: IndexExpr | int, suffix: str = "") -> str:
    """An index expression (or int) in isl syntax, variables renamed with `suffix`."""
    if isinstance(expr, int):
        return str(expr)
    src = expr.to_isl()
    if suffix:
        for v in sorted(expr.vars_used(), key=lambda s: -len(s.name)):
            src = _rename(src, v.name, v.name + suffix)
    return f"({src})"


def _pieces(expr: IntIndexValue | int, suffix: str = "") -> list[tuple[str | None, str]]:
    """(condition, value) isl strings of an index expression; Piecewise gives several."""
    if isinstance(expr, int):
        return [(None, str(expr))]
    from tempo.core.index_expr import isl_pieces

    out = []
    for cond, val in isl_pieces(expr):
        if suffix:
            for v in expr.vars_used():
                val = _rename(val, v.name, v.name + suffix)
                cond = None if cond is None else _rename(cond, v.name, v.name + suffix)
        out.append((cond, f"({val})"))
    return out


def relate(lhs: str, op: str, expr: IntIndexValue | int, suffix: str = "") -> str:
    """The isl constraint `lhs op expr`, split over the pieces of a piecewise expr."""
    parts = [f"({c} and {lhs} {op} {v})" if c else f"{lhs} {op} {v}"
             for c, v in _pieces(expr, suffix)]
    return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"


def _rename(src: str, old: str, new: str) -> str:
    import re

    return re.sub(rf"(?<![A-Za-z0-9_]){re.escape(old)}(?![A-Za-z0-9_])", new, src)


def _tuple(name: str, domain: Domain, suffix: str = "") -> str:
    return f"{name}[{', '.join(v.name + suffix for v in domain.variables)}]"


@dataclass
class Analysis:
    """What scheduling needs to know of an SDG instance, computed once: the isl parameter
    context, each op's full and executed domain, and each edge's exact relation."""

    params: list[str]
    decl: str
    context: isl.Set
    full: dict[str, isl.Set]
    edge_maps: dict[int, isl.UnionMap]
    executed: dict[str, isl.Set]


def analyse(sdg: SDG, bounds: dict[Symbol, int]) -> Analysis:
    """Statement domains, exact edge relations and executed domains of every op."""
    params = sorted({b.name for b in bounds})
    decl = _params_decl(params)
    fixed = " and ".join(f"{p} = {bounds_by_name(bounds)[p]}" for p in params) or "true"
    context = isl.Set(f"{decl} -> {{ : {fixed} }}")

    stmt_domains: dict[str, isl.Set] = {}
    by_domain: dict[str, isl.Set] = {}
    for op in sdg.topological():
        name = stmt_name(op.op_id)
        key = repr(op.domain)
        if key not in by_domain:
            cons = " and ".join(_domain_constraints(op.domain)) or "true"
            try:
                dom = isl.Set(f"{decl} -> {{ {_tuple('P', op.domain)} : {cons} }}")
            except isl.Error as exc:
                raise IndexExprError(f"domain of {op!r} is not affine: {op.domain}",
                                     site=op.site) from exc
            by_domain[key] = dom.intersect_params(context)
        stmt_domains[name] = by_domain[key].set_tuple_name(name)

    edges = [e for es in sdg.in_edges.values() for e in es]
    edge_maps = {id(e): edge_map(sdg, e, decl).intersect_params(context) for e in edges}
    executed = executed_domains(sdg, decl, context, stmt_domains, edge_maps)
    return Analysis(params, decl, context, stmt_domains, edge_maps, executed)


def build_program(sdg: SDG, bounds: dict[Symbol, int], stored: list[TensorId],
                  an: Analysis | None = None, group: bool = True) -> IslProgram:
    """Statements, exact dependences, and free statements for `stored` tensors."""
    an = an or analyse(sdg, bounds)
    params, context, executed, edge_maps = an.params, an.context, an.executed, an.edge_maps
    edges = [e for es in sdg.in_edges.values() for e in es]
    if group:
        groups = group_ops(sdg, {op_id: executed[stmt_name(op_id)] for op_id in sdg.ops})
    else:  # one statement per op: slower for isl, but no join can hide an order
        groups = Groups({i: [i] for i in sdg.ops}, {i: i for i in sdg.ops})
    rep = groups.rep_of
    stmt_domains = {stmt_name(r): executed[stmt_name(r)] for r in groups.members}

    def internal(e: Edge) -> bool:
        return rep[e.src.op_id] == rep[e.sink] and is_basis(e, sdg)

    deps = isl.UnionMap.empty(context.get_space().params())
    group_maps: dict[int, isl.UnionMap] = {}
    same_point: set[int] = set()  # internal edges that read the group's own point
    for e in edges:
        m = edge_maps[id(e)].intersect_range(isl.UnionSet.from_set(executed[stmt_name(e.sink)]))
        if internal(e):
            same_point.add(id(e))
            continue
        g_src, g_sink = rep[e.src.op_id], rep[e.sink]
        m = _rename_tuples(m, stmt_name(g_src), stmt_name(g_sink))
        if g_src == g_sink:
            # The same-point part is ordered inside the group; isl sees the rest.
            ident = isl.UnionSet.from_set(stmt_domains[stmt_name(g_src)]).identity()
            if not m.intersect(ident).is_empty():
                same_point.add(id(e))
            m = m.subtract(ident)
        group_maps[id(e)] = m
        deps = deps.union(m)
    for r, ms in groups.members.items():
        groups.members[r] = order_members(sdg, ms, lambda e: id(e) in same_point)

    frees: dict[str, list[TensorId]] = {}
    after_group: dict[int, list[TensorId]] = {}
    free_deps = isl.UnionMap.empty(context.get_space().params())
    for tid in stored:
        readers = sdg.readers(tid)
        r = rep[tid.op_id]
        if all(internal(e) for e in readers):
            after_group.setdefault(r, []).append(tid)
            continue
        fname = free_name(TensorId(r, 0))
        if fname not in frees:
            frees[fname] = []
            src_dom = stmt_domains[stmt_name(r)]
            stmt_domains[fname] = src_dom.set_tuple_name(fname)
            own = isl.Map.identity(src_dom.get_space().map_from_set()).intersect_domain(src_dom)
            own = own.set_tuple_name(isl.dim_type.out, fname)
            free_deps = free_deps.union(isl.UnionMap.from_map(own))
        frees[fname].append(tid)
        for e in readers:
            if not internal(e):
                free_deps = free_deps.union(_rename_range(group_maps[id(e)].reverse(), fname))

    domains = isl.UnionSet.empty(context.get_space().params())
    for s in stmt_domains.values():
        domains = domains.union(isl.UnionSet.from_set(s))
    return IslProgram(params, context, domains, deps, free_deps, stmt_domains, frees,
                      groups.members, after_group)


def bounds_by_name(bounds: dict[Symbol, int]) -> dict[str, int]:
    return {b.name: int(v) for b, v in bounds.items()}


def _rename_tuples(m: isl.UnionMap, src: str, sink: str) -> isl.UnionMap:
    out = isl.UnionMap.empty(m.get_space())
    maps: list[isl.Map] = []
    m.foreach_map(maps.append)
    for bm in maps:
        bm = bm.set_tuple_name(isl.dim_type.in_, src).set_tuple_name(isl.dim_type.out, sink)
        out = out.union(isl.UnionMap.from_map(bm))
    return out


def _rename_range(m: isl.UnionMap, name: str) -> isl.UnionMap:
    out = isl.UnionMap.empty(m.get_space())
    maps: list[isl.Map] = []
    m.foreach_map(maps.append)
    for bm in maps:
        out = out.union(isl.UnionMap.from_map(bm.set_tuple_name(isl.dim_type.out, name)))
    return out


def edge_relation_str(sdg: SDG, e: Edge, decl: str) -> str:
    """`{ S_src[p'] -> S_sink[p] : p in sink dom, p' in src dom, cond(p), p' = expr(p) }`."""
    sink, src = sdg.ops[e.sink], sdg.ops[e.src.op_id]
    cons = _domain_constraints(sink.domain) + _domain_constraints(src.domain, SRC_SUFFIX)
    if e.cond is not None:
        cons.append(f"({e.cond.to_isl()})")
    for v, member in zip(src.domain.variables, e.expr):
        sv = v.name + SRC_SUFFIX
        if isinstance(member, Slice):
            cons.append(relate(sv, ">=", member.start))
            cons.append(relate(sv, "<", member.stop))
        else:
            assert isinstance(member, IntIndexValue), member  # a point read: an integer index
            cons.append(relate(sv, "=", member))
    lhs = _tuple(stmt_name(src.op_id), src.domain, SRC_SUFFIX)
    rhs = _tuple(stmt_name(sink.op_id), sink.domain)
    return f"{decl} -> {{ {lhs} -> {rhs} : {' and '.join(cons) or 'true'} }}"


_SHAPES: dict[tuple[str, ...], isl.Map | isl.Set] = {}


def shape_key(kind: str, sdg: SDG, e: Edge, decl: str) -> tuple[str, ...]:
    """Edges of the same shape (domains, index expression, condition) have the same
    relation up to statement names: repeated layers parse it once."""
    sink, src = sdg.ops[e.sink], sdg.ops[e.src.op_id]
    return (kind, decl, repr(src.domain), repr(sink.domain), str(e.expr), str(e.cond))


def _remember(key: tuple[str, ...], value: isl.Map | isl.Set) -> None:
    if len(_SHAPES) > 4096:  # bounded across compiles in one process
        _SHAPES.clear()
    _SHAPES[key] = value


def _renamed(m: isl.Map, src: str, sink: str) -> isl.Map:
    return m.set_tuple_name(isl.dim_type.in_, src).set_tuple_name(isl.dim_type.out, sink)


def edge_map(sdg: SDG, e: Edge, decl: str) -> isl.UnionMap:
    key = shape_key("edge", sdg, e, decl)
    src, sink = stmt_name(e.src.op_id), stmt_name(e.sink)
    hit = _SHAPES.get(key)
    if isinstance(hit, isl.Map):
        return isl.UnionMap.from_map(_renamed(hit, src, sink))
    try:
        m = isl.Map(edge_relation_str(sdg, e, decl))
        _remember(key, m)
    except isl.Error as exc:
        reader = sdg.ops[e.sink]
        raise IndexExprError(
            f"{naming.op_label(reader, sdg.names)} reads {naming.tensor_label(sdg, e.src)} "
            f"at [{naming.index_word(e.expr)}], which is not affine (index expressions may "
            "add symbols, multiply them by constants, and use // or % by constants, ie.min "
            "and ie.max)", site=reader.site,
        ) from exc
    return isl.UnionMap.from_map(m)


def _outside(lo: IntIndexValue | int, hi: IntIndexValue | int,
             ub: IntIndexValue | int) -> str:
    """isl condition: the range [lo, hi) leaves [0, ub) (or is reversed)."""
    alts = []
    for cl, vl in _pieces(lo):
        for ch, vh in _pieces(hi):
            for cu, vu in _pieces(ub):
                conds = " and ".join(c for c in (cl, ch, cu) if c) or "true"
                alts.append(f"({conds} and ({vl} < 0 or {vh} > {vu} or {vh} < {vl}))")
    return "(" + " or ".join(alts) + ")"


def read_outside(sdg: SDG, e: Edge, decl: str, context: isl.Set) -> isl.Set:
    """Sink points (under the edge condition) whose read falls outside the source domain."""
    key = shape_key("outside", sdg, e, decl) + (str(context),)
    hit = _SHAPES.get(key)
    if isinstance(hit, isl.Set):
        return hit.set_tuple_name(stmt_name(e.sink))
    out = _read_outside(sdg, e, decl, context)
    _remember(key, out)
    return out


def _read_outside(sdg: SDG, e: Edge, decl: str, context: isl.Set) -> isl.Set:
    sink, src = sdg.ops[e.sink], sdg.ops[e.src.op_id]
    cons = _domain_constraints(sink.domain)
    if e.cond is not None:
        cons.append(f"({e.cond.to_isl()})")
    outs = []
    for v, member in zip(src.domain.variables, e.expr):
        ub = src.domain.bound_of(v)
        if isinstance(member, Slice):
            lo, hi = member.start, member.stop
        else:  # a point read: an integer index (edges hold no boolean members)
            assert isinstance(member, IntIndexValue), member
            lo, hi = member, member + 1
        outs.append(_outside(lo, hi, ub))
    if not outs:
        outs = ["false"]
    where = " and ".join([*cons, f"({' or '.join(outs)})"])
    text = f"{decl} -> {{ {_tuple(stmt_name(sink.op_id), sink.domain)} : {where} }}"
    return isl.Set(text).intersect_params(context)
