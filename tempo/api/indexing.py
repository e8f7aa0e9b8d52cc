"""Symbolic and spatial indexing (`x[...]`) and definitions by assignment (`x[...] = v`),
with the normalisation rules and semantics of API.md §3.4–§3.5."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import RTBase, active_ctx, check_symbols, label, lift, same_context
from tempo.core import index_expr as ie
from tempo.core import naming, ops
from tempo.core.errors import (
    DefinitionError,
    DomainError,
    DTypeError,
    IndexExprError,
    ShapeError,
    TempoError,
    called_from_tempo,
    user_site,
)
from tempo.core.sdg import Edge

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor

_FULL = slice(None, None, None)


def _is_full(k: Any) -> bool:
    return isinstance(k, slice) and k == _FULL


def _expand_key(key: Any, total: int, what: str = "the tensor") -> list[Any]:
    """Apply `...` expansion; reject more indices than dims."""
    if isinstance(key, ie.IndexSequence):
        key = tuple(key)
    keys = list(key) if isinstance(key, tuple) else [key]
    n_ell = sum(1 for k in keys if k is Ellipsis)
    if n_ell > 1:
        raise IndexExprError("an index may hold at most one '...'", site=user_site())
    if n_ell:
        at = keys.index(Ellipsis)
        fill = total - (len(keys) - 1)
        keys = keys[:at] + [_FULL] * max(fill, 0) + keys[at + 1 :]
    if len(keys) > total:
        dims = f"{total} dim" + "s" * (total != 1)
        msg = (f"{len(keys)} indices for {what}" if what.startswith("the definition")
               else f"{len(keys)} indices for {what}, which has {dims} in all")
        raise IndexExprError(msg, site=user_site())
    return keys


def _symbolic_member(var: ie.Symbol, k: Any, what: str) -> ie.IndexAtom:
    if _is_full(k):
        return var
    if isinstance(k, RTBase):
        raise IndexExprError(f"{what}: tensor-valued indices are only allowed in spatial "
                             "positions", site=user_site())
    if isinstance(k, slice):
        if k.step not in (None, 1):
            raise IndexExprError(f"slices of the symbolic dims of {what} need step 1, got "
                                 f"step {k.step}", site=user_site())
        start = var.as_bound() * 0 if k.start is None else _neg_to_bound(var, k.start)
        stop = var.as_bound() if k.stop is None else _neg_to_bound(var, k.stop)
        member = ie.slice_(start, stop)
    elif isinstance(k, bool):
        raise IndexExprError(f"{what}: a bool is not an index", site=user_site())
    elif isinstance(k, int):
        member = ie.ConstInt(k) if k >= 0 else var.as_bound() + k
    elif isinstance(k, ie.IntIndexValue | ie.Slice):
        member = k
    else:
        raise IndexExprError(f"{what}: cannot index a symbolic dim with {k!r}", site=user_site())
    check_symbols(member, f"the index [{naming.expr_word(member)}] of {what}")
    _check_affine(member, what)
    return member


def _check_affine(member: Any, what: str) -> None:
    """Index expressions must be affine (what isl schedules): caught here, at the user's
    line, rather than at compile time deep inside the scheduler."""
    parts = [member.start, member.stop] if isinstance(member, ie.Slice) else [member]
    for p in parts:
        if not isinstance(p, ie.IndexExpr):
            continue
        try:
            ie.isl_pieces(p) if isinstance(p, ie.IntIndexValue) else p.to_isl()
        except ie.NonAffineIndexExprError:
            raise ie.NonAffineIndexExprError(
                f"{what} is read or defined at {naming.expr_word(p)}, which is not affine "
                f"({_why_not_affine(p) or 'not an affine integer expression'}). "
                "Index expressions may add symbols, multiply them by constants, and use "
                "// or % by constants, ie.min and ie.max", site=user_site()) from None


def _why_not_affine(e: ie.IndexExpr) -> str:
    """The first part of `e` that is not affine, said in the user's terms."""
    for c in e.children():
        why = _why_not_affine(c)
        if why:
            return why
    w = naming.expr_word(e)
    if isinstance(e, ie.ConstInt) and not isinstance(e.const, int):
        return f"{w} is not an integer: points are numbered by integers"
    if isinstance(e, ie.TrueDivision):
        return f"{w} is a true division; use // for an integer index"
    if isinstance(e, ie.Pow):
        return f"{w} raises to a power"
    if isinstance(e, ie.Mul) and not any(isinstance(c, ie.ConstInt) for c in e.children()):
        return f"{w} multiplies two symbols"
    if isinstance(e, ie.FloorDivision | ie.Modulos) and not isinstance(e.right_operand,
                                                                       ie.ConstInt):
        return f"{w} divides by {naming.expr_word(e.right_operand)}, not by a constant"
    return ""


def _neg_to_bound(var: ie.Symbol, x: Any) -> Any:
    if isinstance(x, int) and not isinstance(x, bool) and x < 0:
        return var.as_bound() + x
    return x


def getitem(x: RecurrentTensor, key: Any) -> RecurrentTensor:
    if x.is_indexed and not (isinstance(key, tuple) and not key):
        x = x.ident()
    vars_ = x.unindexed_domain.variables
    n_sym, n_sp = len(vars_), len(x.spatial_shape)
    what = label(x)
    dims = (f"{what} (symbolic dims {naming.domain_word(x.unindexed_domain)}, spatial shape "
            f"{naming.shape_word(x.spatial_shape)})")
    keys = _expand_key(key, n_sym + n_sp, dims)
    sym_keys = keys[:n_sym] + [_FULL] * (n_sym - len(keys[:n_sym]))
    members = [_symbolic_member(v, k, what) for v, k in zip(vars_, sym_keys)]
    seq = ie.IndexSequence(tuple(members))
    out: Any = x._wrap(x.tensor_id, None if seq.is_basis() and _is_own_basis(seq, vars_) else seq,
                       x.requires_grad)
    if out.is_indexed:
        out._index_site = user_site()
    n_slices = seq.num_slices()
    sp_keys = keys[n_sym:]
    # Right to left, so removing a dim never shifts one still to be indexed (NumPy rule).
    for j in reversed(range(len(sp_keys))):
        k, dim = sp_keys[j], n_slices + j
        if _is_full(k):
            continue
        if isinstance(k, slice):
            if k.step not in (None, 1):
                raise IndexExprError(f"{what}: spatial slices need step 1", site=user_site())
            size = out.shape[dim]
            start = 0 if k.start is None else k.start
            stop = size if k.stop is None else k.stop
            if isinstance(start, int) and start < 0:
                start = size + start
            if isinstance(stop, int) and stop < 0:
                stop = size + stop
            out = out.slice_dim(dim, start, stop)
        elif isinstance(k, int) and not isinstance(k, bool):
            out = out.index(dim, k if k >= 0 else out.shape[dim] + k)
        else:
            out = out.index(dim, k)
    return out


def _is_own_basis(seq: ie.IndexSequence, vars_: tuple[ie.Symbol, ...]) -> bool:
    return all(isinstance(m, ie.Symbol) and m.name == v.name for m, v in zip(seq, vars_))


# -------------------------------------------------------------------- definitions
def setitem(x: RTBase, key: Any, value: Any) -> None:
    """Append one branch (condition, value) to placeholder `x` (first true branch wins)."""
    site = user_site()
    op = x.op
    if not isinstance(op, ops.MergeOp):
        raise TempoError(f"only placeholders can be defined by assignment, but {label(x)} is "
                         f"a {naming.kind(op)}: create it with RecurrentTensor.placeholder()",
                         site=site)
    if x.is_indexed:
        raise TempoError(f"assign to the placeholder {label(x)} itself (x[key] = value), "
                         "not to an indexed read of it", site=site)
    ctx = active_ctx()
    vars_ = op.domain.variables
    cond: ie.BooleanIndexValue = ctx.current_condition
    shifts: dict[str, tuple[ie.Symbol, int]] = {}
    if isinstance(key, ie.BooleanIndexValue | bool):
        check_symbols(ie.lift_to_bool_ie(key), f"condition {key}")
        _check_affine(ie.lift_to_bool_ie(key), f"the definition of {label(x)}")
        cond = cond & ie.lift_to_bool_ie(key)
    else:
        hint = (": give the placeholder the dims its definitions index, e.g. "
                "RT.placeholder(shape, dtype, domain=(t,))" if not vars_ else "")
        keys = _expand_key(key, len(vars_), f"the definition of {label(x)}, whose domain "
                           f"{naming.domain_word(op.domain)} has {len(vars_)} dims{hint}")
        for v, k in zip(vars_, keys):
            if _is_full(k):
                continue
            m = ie.lift_to_ie(k) if not isinstance(k, ie.IndexExpr) else k
            if isinstance(m, ie.Slice) or not isinstance(m, ie.IntIndexValue):
                raise IndexExprError(f"definition key {k!r} for {v} must be a point",
                                     site=site)
            check_symbols(m, f"definition key {m}")
            _check_affine(m, label(x))
            if isinstance(m, ie.Symbol) and m.name == v.name:
                continue
            c = _shift_of(m, v)
            if c is not None:
                shifts[v.name] = (v, c)
                continue
            cond = cond & v.symb_eq(m)
    val = same_context(_lift_value(value, x), ctx)
    _check_definition(x, val, site)
    if not called_from_tempo(2):
        _check_not_shadowed(x, op, site)
    expr = val.read_expr
    if shifts:
        expr = expr.remap({v: v - c for v, c in shifts.values()})
        dom = op.domain
        for v, c in shifts.values():
            dom = dom.with_bound(v, v.as_bound() + c)
        op = replace(op, domain=dom)
        x.sdg.replace_op(op)
    edge_cond = None if isinstance(cond, ie.ConstBool) and cond.const else cond
    k = len(x.sdg.in_edges[op.op_id])
    x.sdg.add_edge(Edge(op.op_id, k, val.tensor_id, expr, edge_cond, site=site))


def check_user_definition(x: RTBase) -> None:
    """The shadowing check for a definition a user makes through Tempo's own API (`x.init =
    v`), which `setitem` skips for calls from inside the library."""
    if isinstance(x.op, ops.MergeOp) and not x.is_indexed:
        _check_not_shadowed(x, x.op, user_site())


def _check_not_shadowed(x: RTBase, op: ops.Op, site: str) -> None:
    """A branch registered after an unconditional one is never taken (the first branch whose
    condition holds wins): the user almost surely meant it to come first."""
    for e in x.sdg.in_edges[op.op_id]:
        if e.cond is None:
            raise DefinitionError(
                f"this definition of {label(x)} is never used: {naming.at_site(e.site)} "
                "already defines it at every point, and branches are tried in the order they "
                "were written (the first whose condition holds wins). Write this one (e.g. the "
                "base case) before it", site=site)


def _shift_of(m: ie.IntIndexValue, v: ie.Symbol) -> int | None:
    """c if m is `v + c` with a positive constant c (the shift sugar), else None."""
    if isinstance(m, ie.Add):
        a, b = m.left_operand, m.right_operand
        for s, c in ((a, b), (b, a)):
            if isinstance(s, ie.Symbol) and s.name == v.name and isinstance(c, ie.ConstInt):
                k = c.const  # ConstInt also holds floats (ConstFloat is the same node)
                return k if isinstance(k, int) and k > 0 else None
    return None


def _lift_value(value: Any, x: RTBase) -> RecurrentTensor:
    from tempo.api.ops import creation

    if isinstance(value, bool | int | float):
        return creation.const(value, shape=tuple(x.shape), dtype=x.dtype)
    if isinstance(value, tuple | list) and any(isinstance(v, RTBase) for v in value):
        raise DefinitionError(
            f"{label(x)} is defined by a {type(value).__name__} of {len(value)} values (e.g. the "
            "(h, c) pair an LSTMCell returns): a definition takes one tensor, so unpack it "
            "first (`h_new, c_new = cell(x, (h, c))`, then `h[...] = h_new`, `c[...] = c_new`)",
            site=user_site())
    val = lift(value)
    if val.is_indexed and any(isinstance(m, ie.Slice) for m in val.read_expr):
        val = val.ident()
    return val


def _check_definition(x: RTBase, val: RTBase, site: str) -> None:
    if val.shape != x.shape:
        raise ShapeError(f"{label(x)} has shape {naming.shape_word(x.shape)}, but this "
                         f"definition gives it a value of shape {naming.shape_word(val.shape)}",
                         site=site)
    if val.dtype != x.dtype:
        want, got = naming.dtype_word(x.dtype), naming.dtype_word(val.dtype)
        raise DTypeError(f"{label(x)} has dtype {want}, but this definition gives it a value "
                         f"of dtype {got} (cast it first: value.cast(dtypes.{want}))", site=site)
    if not val.domain.is_contained_in(x.unindexed_domain):
        raise DomainError(f"{label(x)} has domain {naming.domain_word(x.unindexed_domain)}, but "
                          f"this definition gives it a value over the larger domain "
                          f"{naming.domain_word(val.domain)}", site=site)
