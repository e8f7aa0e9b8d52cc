"""Construction: placeholders, constants, fills, ranges, symbols and user sources."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.tensor_base import RTBase, active_ctx, check_symbols, record1, set_name
from tempo.core import index_expr as ie
from tempo.core import naming, ops
from tempo.core.domain import Domain, DomainLike
from tempo.core.dtype import DataType, DataTypeLike, dtypes
from tempo.core.errors import (
    DTypeError,
    IndexExprError,
    ShapeError,
    TempoError,
    in_user_names,
    user_site,
)
from tempo.core.shape import Shape, ShapeLike

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _dt(dtype: DataTypeLike | None, default: DataType | None = None) -> DataType:
    if dtype is None:
        return default if default is not None else dtypes.default_float
    return dtypes.from_(dtype)


def _domain(domain: DomainLike, fallback_ctx: bool = False) -> Domain:
    if domain is None:
        return active_ctx().default_domain if fallback_ctx else Domain.empty()
    dom = Domain.from_(domain, none_is_empty=True)
    for v in dom.variables:
        check_symbols(v, f"domain {naming.domain_word(dom)}")
    return dom


def _with_grad(x: RecurrentTensor, requires_grad: bool | None) -> RecurrentTensor:
    """Only float tensors take gradients (as in PyTorch): an integer or bool leaf made with
    `requires_grad=True` would get no `.grad` from any loss, a silent None later."""
    if requires_grad is True and not dtypes.is_float(x.dtype):
        raise DTypeError("only float tensors can require grad, but this one is "
                         f"{naming.dtype_word(x.dtype)}: "
                         "cast it to a float dtype, or leave requires_grad unset",
                         site=user_site())
    x.requires_grad = requires_grad
    return x


def placeholder(shape: ShapeLike = (), dtype: DataTypeLike | None = None,
                domain: DomainLike = None, requires_grad: bool | None = None,
                name: str | None = None) -> RecurrentTensor:
    """An undefined tensor, defined piecewise by `x[key] = value` (a recurrence). Errors
    call it by `name` if given (ours), else by the line that created it."""
    shp, dt = Shape.from_(shape), _dt(dtype)
    x = record1(ops.MergeOp, [], domain=_domain(domain, fallback_ctx=True), shape=shp, dtype=dt)
    return set_name(_with_grad(x, requires_grad), name)


def placeholder_like(x: RTBase, requires_grad: bool | None = None) -> RecurrentTensor:
    return placeholder(x.shape, x.dtype, x.domain, requires_grad)


def _holds_tensor(val: Any) -> bool:
    """Whether a (nested) list or tuple has a RecurrentTensor among its leaves."""
    return any(isinstance(v, RTBase) or (isinstance(v, list | tuple) and _holds_tensor(v))
               for v in val)


def const(val: Any, shape: ShapeLike | None = None, dtype: DataTypeLike | None = None,
          domain: DomainLike = None, requires_grad: bool | None = None) -> RecurrentTensor:
    """A constant over the empty domain; the dtype is implied from `val` unless given.
    `domain` is accepted for compatibility and ignored with a warning (API §3.3)."""
    if domain is not None and len(Domain.from_(domain, none_is_empty=True)) > 0:
        warnings.warn(in_user_names(f"const() ignores domain={domain}: a constant has the "
                                    "empty domain (index or expand it to give it one)"),
                      stacklevel=2)
    if isinstance(val, np.ndarray) and shape is not None:
        raise ShapeError("const() takes no shape with an ndarray value", site=user_site())
    if isinstance(val, list | tuple) and _holds_tensor(val):
        raise TempoError(f"const() of a {type(val).__name__} holding RecurrentTensors: a constant "
                         "is made of numbers; join tensors with RT.stack(...) / RT.cat(...)",
                         site=user_site())
    dt = dtypes.implied(val) if dtype is None else dtypes.from_(dtype)
    if hasattr(val, "detach"):  # torch (its bfloat16 has no numpy conversion of its own)
        from tempo.runtime.host_arrays import torch_to_host

        val = torch_to_host(val)
    arr = np.asarray(val, dtype=dtypes.to_np(dt))
    if shape is not None:
        shp = Shape.from_(shape)
        if not shp.is_static():
            return _with_grad(fill(val, shp, dt), requires_grad)
        arr = np.broadcast_to(arr, tuple(shp.as_static())).copy()
    x = record1(ops.ConstOp, [], value=arr, dtype=dt)
    return _with_grad(x, requires_grad)


def const_like(val: Any, y: RTBase, requires_grad: bool | None = None) -> RecurrentTensor:
    return const(val, shape=tuple(y.shape), requires_grad=requires_grad)


def fill(value: float | int | bool, shape: ShapeLike, dtype: DataTypeLike | None = None,
         domain: DomainLike = None, requires_grad: bool | None = None) -> RecurrentTensor:
    """A tensor filled with `value`; the shape may be symbolic (e.g. `(t+1, 4)`)."""
    shp = Shape.from_(shape)
    for d in shp:
        if not isinstance(d, int):
            check_symbols(d, f"shape {shp}")
    dom = Domain.empty().union(*[Domain(sorted(d.vars_used(), key=lambda v: v.idx))
                                 for d in shp if not isinstance(d, int)])
    x = record1(ops.FillOp, [], domain=dom, value=value, shape=shp, dtype=_dt(dtype))
    return _with_grad(x, requires_grad)


def ones(shape: ShapeLike = (), dtype: DataTypeLike | None = None, domain: DomainLike = None,
         requires_grad: bool | None = None) -> RecurrentTensor:
    """A tensor of ones over the empty domain (API §3.2: `domain` ignored, with a warning
    as for const: `RT.ones((4,), domain=(t,))` has no `t`)."""
    _warn_domain_ignored("ones", domain)
    return fill(1, shape, dtype, None, requires_grad)


def zeros(shape: ShapeLike = (), dtype: DataTypeLike | None = None, domain: DomainLike = None,
          requires_grad: bool | None = None) -> RecurrentTensor:
    """A tensor of zeros over the empty domain (`domain` ignored with a warning, as `ones`)."""
    _warn_domain_ignored("zeros", domain)
    return fill(0, shape, dtype, None, requires_grad)


def _warn_domain_ignored(name: str, domain: DomainLike) -> None:
    if domain is not None and len(Domain.from_(domain, none_is_empty=True)) > 0:
        warnings.warn(in_user_names(f"{name}() ignores domain={domain}: the result has the "
                                    "empty domain (index or expand it to give it one)"),
                      stacklevel=3)


def ones_like(y: RTBase, dtype: DataTypeLike | None = None,
              requires_grad: bool | None = None) -> RecurrentTensor:
    return ones(y.shape, dtype, None, requires_grad)


def zeros_like(y: RTBase, dtype: DataTypeLike | None = None,
               requires_grad: bool | None = None) -> RecurrentTensor:
    return zeros(y.shape, dtype, None, requires_grad)


def full(shape: ShapeLike, value: float | int | bool, dtype: DataTypeLike | None = None,
         requires_grad: bool | None = None) -> RecurrentTensor:
    return fill(value, shape, dtype if dtype is not None else dtypes.implied(value), None,
                requires_grad)


def arange(stop: Any, start: int = 0, step: int = 1, dtype: DataTypeLike | None = None,
           requires_grad: bool | None = None) -> RecurrentTensor:
    """[start, stop) with `step`; `stop` is the first positional argument (API §3.3)."""
    dt = _dt(dtype, dtypes.default_int)
    if isinstance(stop, int) and isinstance(start, int):
        arr = np.arange(start, stop, step)
        return const(arr.astype(dtypes.to_np(dt)), dtype=dt, requires_grad=requires_grad)
    # Symbolic length: cumsum of ones, shifted.
    n = (ie.lift_to_int_ie(stop) - start + step - 1) // step
    seq = ones((n,), dt).cumsum(0) - 1
    out = seq * step + start if (step != 1 or start != 0) else seq
    return _with_grad(out.cast(dt), requires_grad)


def from_symbol(s: ie.Symbol, dtype: DataTypeLike | None = None) -> RecurrentTensor:
    """A scalar holding the current value of symbol `s` (domain `(s,)` for a variable)."""
    if not isinstance(s, ie.Symbol):
        got = naming.expr_word(s) if isinstance(s, ie.IndexExpr) else repr(s)
        hint = (f"; for an expression use RecurrentTensor.from_expr({got})"
                if isinstance(s, ie.IndexExpr) else "")
        raise IndexExprError(f"from_symbol takes one symbol (a dimension's variable or its "
                             f"bound), got {got}{hint}", site=user_site())
    check_symbols(s, f"symbol {s}")
    dom = Domain((s,)) if not s.is_bound else Domain.empty()
    return record1(ops.EvalSymbolOp, [], domain=dom, symbol=s,
                   dtype=_dt(dtype, dtypes.default_int))


def from_expr(e: ie.IndexExpr) -> RecurrentTensor:
    """An index expression translated into tensor arithmetic."""
    from tempo.api.recurrent_tensor import RecurrentTensor as RT

    if isinstance(e, ie.Symbol):
        return from_symbol(e)
    if isinstance(e, ie.ConstInt):
        return const(e.const, dtype=dtypes.default_int)
    if isinstance(e, ie.ConstBool):
        return const(e.const)
    if isinstance(e, ie.IndexSequence):
        return RT.stack([from_expr(m) for m in e])
    if isinstance(e, ie.Slice):
        return arange(e.stop, 0) + from_expr(e.start) if not isinstance(e.start, ie.ConstInt) \
            else arange(e.stop, int(e.start.const))
    binary: dict[type, Callable[[Any, Any], Any]] = {
        ie.Add: lambda a, b: a + b, ie.Sub: lambda a, b: a - b, ie.Mul: lambda a, b: a * b,
        ie.FloorDivision: lambda a, b: a // b, ie.Modulos: lambda a, b: a % b,
        ie.Pow: lambda a, b: a**b, ie.TrueDivision: lambda a, b: a / b,
        ie.Equal: lambda a, b: a == b, ie.LessThan: lambda a, b: a < b,
        ie.LessThanOrEqual: lambda a, b: a <= b, ie.GreaterThan: lambda a, b: a > b,
        ie.GreaterThanOrEqual: lambda a, b: a >= b,
    }
    for cls, fn in binary.items():
        if isinstance(e, cls):
            left, right = e.children()  # a binary node's two operands
            return fn(from_expr(left), from_expr(right))
    if isinstance(e, ie.Neg):
        return -from_expr(e.operand)
    if isinstance(e, ie.Min | ie.Max):
        parts = [from_expr(o) for o in e.operands]
        out = parts[0]
        for p in parts[1:]:
            out = out.minimum(p) if isinstance(e, ie.Min) else out.maximum(p)
        return out
    if isinstance(e, ie.And | ie.Or):
        parts = [from_expr(o) for o in e.operands]
        out = parts[0]
        for p in parts[1:]:
            out = (out & p) if isinstance(e, ie.And) else (out | p)
        return out
    if isinstance(e, ie.Not):
        return ~from_expr(e.operand)
    raise TempoError(f"cannot translate index expression {e} into a tensor", site=user_site())


def random(shape: ShapeLike = (), dtype: DataTypeLike | None = None, domain: DomainLike = None,
           requires_grad: bool | None = None) -> RecurrentTensor:
    """U[0,1); without `domain` one draw is shared by all points (API §3.3)."""
    x = record1(ops.RandOp, [], domain=_domain(domain), shape=Shape.from_(shape), dtype=_dt(dtype))
    return _with_grad(x, requires_grad)


def source_udf(fun: Callable[[], Any], shape: ShapeLike, dtype: DataTypeLike | None,
               domain: DomainLike = None, requires_grad: bool = False,
               name: str | None = None) -> RecurrentTensor:
    x = record1(ops.UDFSourceOp, [], domain=_domain(domain), fn=fun, shape=Shape.from_(shape),
                dtype=_dt(dtype), with_ts=False)
    return set_name(_with_grad(x, requires_grad), name)


def source_with_ts_udf(fun: Callable[[dict], Any], shape: ShapeLike, dtype: DataTypeLike | None,
                       domain: DomainLike = None, lazy_vectorized_version: Any = None,
                       requires_grad: bool = False, name: str | None = None) -> RecurrentTensor:
    """A user source called with the current symbol values (`{t: 3, ...}`) at each point.

    `lazy_vectorized_version(dim, size)` (optional) returns a function of the same symbol
    values without `dim` that produces all `size` points along `dim` at once, as a tensor
    of shape `(size, *shape)` whose row `k` is what `fun` gives at `dim = k`, or None when
    it has no batched form along `dim`. The vectorisation pass calls it at compile time
    when it considers batching the source over `dim` (one dimension at most); without
    it the source keeps its loop over every dimension."""
    x = record1(ops.UDFSourceOp, [], domain=_domain(domain), fn=fun, shape=Shape.from_(shape),
                dtype=_dt(dtype), with_ts=True, lazy_vectorized_version=lazy_vectorized_version)
    return set_name(_with_grad(x, requires_grad), name)


class CreationOps:
    """Static constructors mixed into RecurrentTensor."""

    placeholder = staticmethod(placeholder)
    placeholder_like = staticmethod(placeholder_like)
    const = staticmethod(const)
    const_like = staticmethod(const_like)
    fill = staticmethod(fill)
    full = staticmethod(full)
    ones = staticmethod(ones)
    zeros = staticmethod(zeros)
    ones_like = staticmethod(ones_like)
    zeros_like = staticmethod(zeros_like)
    arange = staticmethod(arange)
    from_symbol = staticmethod(from_symbol)
    from_expr = staticmethod(from_expr)
    random = staticmethod(random)
    rand = staticmethod(random)
    source_udf = staticmethod(source_udf)
    source_with_ts_udf = staticmethod(source_with_ts_udf)
