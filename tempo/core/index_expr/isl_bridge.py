"""The isl/sympy bridge of index expressions: isl strings with piecewise parts, conversion of
islpy `Aff`/`PwAff`/`AstExpr` back to IndexExpr, and logical equality (isl, else sympy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import islpy as isl

from tempo.core import index_expr as ie
from tempo.core.errors import IndexExprError

_OP = isl.ast_expr_op_type


def isl_constraint_str(cond: ie.BooleanIndexValue | bool) -> str:
    """isl constraint syntax of a condition (`cond.to_isl()`), e.g. `(t >= 1 and t < T)`."""
    return ie.lift_to_bool_ie(cond).to_isl()


def isl_pieces(e: ie.IntIndexValue) -> list[tuple[str | None, str]]:
    """`(condition, expression)` isl strings with disjoint conditions, one per branch of the
    piecewise parts of `e` (condition None when `e` has none). Use as `[..] -> [expr] : cond`."""
    out: list[tuple[str | None, str]] = []
    for cond, expr in e.enumerate_all_cond_branches():
        out.append((None if cond is None else cond.to_isl(), expr.to_isl()))
    return out


def _symbol(name: str, symbols: Mapping[str, ie.Symbol] | None) -> ie.Symbol:
    if symbols and name in symbols:
        return symbols[name]
    return ie.Symbol(name, is_bound=name[:1].isupper())


def from_isl_ast_expr(
    expr: isl.AstExpr, symbols: Mapping[str, ie.Symbol] | None = None
) -> ie.IndexExpr:
    """An isl AST expression (loop bounds, guards) as an IndexExpr.
    Identifiers become `symbols[name]` (or a fresh Symbol, bound if upper-case)."""
    kind = expr.get_type()
    if kind == isl.ast_expr_type.int:
        return ie.ConstInt(int(expr.get_val().to_python()))
    if kind == isl.ast_expr_type.id:
        return _symbol(expr.get_id().get_name(), symbols)
    op = expr.get_op_type()
    args: list[Any] = [
        from_isl_ast_expr(expr.get_op_arg(i), symbols) for i in range(expr.get_op_n_arg())
    ]
    # by name: islpy's stub omits the members named after Python keywords
    if op in (_OP.__members__["and_"], _OP.and_then):
        return args[0] & args[1]
    if op in (_OP.__members__["or_"], _OP.or_else):
        return args[0] | args[1]
    if op == _OP.max:
        return ie.max(*args)
    if op == _OP.min:
        return ie.min(*args)
    if op == _OP.minus:
        return -args[0]
    if op == _OP.add:
        return args[0] + args[1]
    if op == _OP.sub:
        return args[0] - args[1]
    if op == _OP.mul:
        return args[0] * args[1]
    if op in (_OP.div, _OP.fdiv_q, _OP.pdiv_q):
        return args[0] // args[1]
    if op in (_OP.pdiv_r, _OP.zdiv_r):  # zdiv_r is only compared with 0: `%` agrees there
        return args[0] % args[1]
    if op in (_OP.cond, _OP.select):
        return ie.piecewise([(args[0], args[1]), (True, args[2])])
    if op == _OP.eq:
        return args[0].symb_eq(args[1])
    if op == _OP.le:
        return args[0] <= args[1]
    if op == _OP.lt:
        return args[0] < args[1]
    if op == _OP.ge:
        return args[0] >= args[1]
    if op == _OP.gt:
        return args[0] > args[1]
    raise IndexExprError(f"cannot convert the isl AST expression {expr.to_C_str()}")


def from_isl_pw_aff(
    pw_aff: isl.PwAff, symbols: Mapping[str, ie.Symbol] | None = None
) -> ie.IntIndexValue:
    """A (piecewise) quasi-affine isl function as an IntIndexValue over its input dims and
    parameters (named by `symbols`). Outside the pw_aff's domain the value is unspecified."""
    n_in = pw_aff.dim(isl.dim_type.in_)
    n_par = pw_aff.dim(isl.dim_type.param)
    flat = pw_aff.move_dims(isl.dim_type.param, n_par, isl.dim_type.in_, 0, n_in)
    build = isl.AstBuild.from_context(isl.Set.universe(flat.get_domain_space()))
    out = from_isl_ast_expr(build.expr_from_pw_aff(flat), symbols)
    assert isinstance(out, ie.IntIndexValue)
    return out


def from_isl_aff(aff: isl.Aff, symbols: Mapping[str, ie.Symbol] | None = None) -> ie.IntIndexValue:
    """A quasi-affine isl `Aff` (with integer divisions) as an IntIndexValue."""
    return from_isl_pw_aff(isl.PwAff.from_aff(aff), symbols)


def _isl_empty(names: list[str], cond: str) -> bool:
    return bool(isl.Set(f"[{', '.join(names)}] -> {{ : {cond} }}").is_empty())


def _names(*es: ie.IndexExpr) -> list[str]:
    return sorted({s.name for e in es for s in e.symbols_used()})


def _isl_logical_eq(a: ie.IndexExpr, b: ie.IndexExpr) -> bool:
    names = _names(a, b)
    if isinstance(a, ie.IntIndexValue) and isinstance(b, ie.IntIndexValue):
        diffs = []
        for ca, ea in a.enumerate_all_cond_branches():
            for cb, eb in b.enumerate_all_cond_branches():
                parts = [c.to_isl() for c in (ca, cb) if c is not None]
                parts.append(f"{ea.to_isl()} != {eb.to_isl()}")
                diffs.append("(" + " and ".join(parts) + ")")
        return _isl_empty(names, " or ".join(diffs))
    if isinstance(a, ie.BooleanIndexValue) and isinstance(b, ie.BooleanIndexValue):
        sa, sb = a.to_isl(), b.to_isl()
        return _isl_empty(names, f"(({sa}) and not ({sb})) or (({sb}) and not ({sa}))")
    raise ie.NonAffineIndexExprError(f"no isl comparison of {a} and {b}")


def to_sympy(e: ie.IndexExpr) -> Any:
    """The sympy form of an integer or boolean expression (symbols are integer sympy symbols)."""
    import sympy as sp

    def go(x: ie.IndexExpr) -> Any:
        if isinstance(x, ie.Symbol):
            return sp.Symbol(x.name, integer=True)
        if isinstance(x, (ie.ConstInt, ie.ConstBool)):
            return sp.sympify(x.const)
        k = [go(c) for c in x.children()]
        table: dict[type, Any] = {
            ie.Add: lambda: k[0] + k[1],
            ie.Sub: lambda: k[0] - k[1],
            ie.Mul: lambda: k[0] * k[1],
            ie.FloorDivision: lambda: sp.floor(k[0] / k[1]),
            ie.Modulos: lambda: sp.Mod(k[0], k[1]),
            ie.Pow: lambda: k[0] ** k[1],
            ie.TrueDivision: lambda: k[0] / k[1],
            ie.Neg: lambda: -k[0],
            ie.Ceil: lambda: sp.ceiling(k[0]),
            ie.Floor: lambda: sp.floor(k[0]),
            ie.Min: lambda: sp.Min(*k),
            ie.Max: lambda: sp.Max(*k),
            ie.Piecewise: lambda: sp.Piecewise(*[(k[i + 1], k[i]) for i in range(0, len(k), 2)]),
            ie.Equal: lambda: sp.Eq(k[0], k[1]),
            ie.LessThan: lambda: sp.Lt(k[0], k[1]),
            ie.LessThanOrEqual: lambda: sp.Le(k[0], k[1]),
            ie.GreaterThan: lambda: sp.Gt(k[0], k[1]),
            ie.GreaterThanOrEqual: lambda: sp.Ge(k[0], k[1]),
            ie.And: lambda: sp.And(*k),
            ie.Or: lambda: sp.Or(*k),
            ie.Not: lambda: sp.Not(k[0]),
        }
        if type(x) not in table:
            raise IndexExprError(f"no sympy form for {x}")
        return table[type(x)]()

    return go(e)


def _sympy_logical_eq(a: ie.IndexExpr, b: ie.IndexExpr) -> bool:
    import sympy as sp

    sa, sb = to_sympy(a), to_sympy(b)
    if isinstance(a, ie.BooleanIndexValue):
        return bool(sp.simplify_logic(sp.Xor(sa, sb)) == sp.false)
    return bool(sp.simplify(sa - sb) == 0)


def logical_eq_pair(a: ie.IndexExpr, b: ie.IndexExpr) -> bool:
    """True when `a` and `b` agree at every integer point (structurally equal trees are).
    Slices and sequences compare member-wise; isl decides quasi-affine cases, sympy the rest."""
    if a.struct_eq(b):
        return True
    if isinstance(a, ie.Slice) and isinstance(b, ie.Slice):
        return logical_eq_pair(a.start, b.start) and logical_eq_pair(a.stop, b.stop)
    if isinstance(a, ie.IndexSequence) and isinstance(b, ie.IndexSequence):
        return len(a) == len(b) and all(logical_eq_pair(x, y) for x, y in zip(a, b))
    if isinstance(a, ie.IntIndexValue) != isinstance(b, ie.IntIndexValue):
        return False
    if isinstance(a, ie.BooleanIndexValue) != isinstance(b, ie.BooleanIndexValue):
        return False
    try:
        return _isl_logical_eq(a, b)
    except ie.NonAffineIndexExprError:
        pass
    try:
        return _sympy_logical_eq(a, b)
    except (IndexExprError, TypeError):
        return False
