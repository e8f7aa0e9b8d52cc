"""Elementwise arithmetic, comparisons, logic, casts and activations.

Primitives are `UnaryOp`/`BinaryOp`/`WhereOp`/`CastOp`; everything else composes them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import RTBase, lift, record1
from tempo.core import ops
from tempo.core.dtype import DataTypeLike, dtypes
from tempo.core.errors import DTypeError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def unary(fn: str, x: Any) -> RecurrentTensor:
    """Int inputs of float functions are cast up when the op is recorded
    (`UnaryOp.input_dtypes`)."""
    return record1(ops.UnaryOp, [lift(x)], fn=fn)


def binary(fn: str, x: Any, y: Any) -> RecurrentTensor:
    """Operands are cast to their common dtype when the op is recorded
    (`BinaryOp.input_dtypes`): kernels see one dtype, and torch's weak typing of 0-d
    tensors does not leak into results."""
    x, y = _lift_pair(x, y)
    return record1(ops.BinaryOp, [x, y], fn=fn)


def _lift_pair(x: Any, y: Any) -> tuple[RTBase, RTBase]:
    """Lift Python scalars in the other operand's dtype family (weak typing, like torch)."""
    from tempo.api.ops.creation import const

    if isinstance(x, RTBase) and _is_scalar(y):
        y = const(y, dtype=_scalar_dtype(y, x))
    elif isinstance(y, RTBase) and _is_scalar(x):
        x = const(x, dtype=_scalar_dtype(x, y))
    return lift(x), lift(y)


def _is_scalar(v: Any) -> bool:
    return isinstance(v, bool | int | float)


def _scalar_dtype(v: Any, other: RTBase) -> Any:
    implied = dtypes.implied(v)
    return dtypes.upcast(implied, other.dtype) if not dtypes.is_bool(implied) else implied


def cast(x: Any, dtype: DataTypeLike) -> RecurrentTensor:
    x = lift(x)
    dt = dtypes.from_(dtype)
    return x if x.dtype == dt else record1(ops.CastOp, [x], dtype=dt)


def where(condition: Any, true_data: Any, false_data: Any) -> RecurrentTensor:
    a, b = _lift_pair(true_data, false_data)
    return record1(ops.WhereOp, [lift(condition), a, b])


def sigmoid(x: Any) -> RecurrentTensor:
    return unary("sigmoid", x)


def tanh(x: Any) -> RecurrentTensor:
    return unary("tanh", x)


def relu(x: Any) -> RecurrentTensor:
    return unary("relu", x)


class ElementwiseOps:
    """Operators and elementwise methods mixed into RecurrentTensor."""

    def __add__(self, y: Any) -> RecurrentTensor:
        return binary("add", self, y)

    def __radd__(self, y: Any) -> RecurrentTensor:
        return binary("add", y, self)

    def __sub__(self, y: Any) -> RecurrentTensor:
        return binary("sub", self, y)

    def __rsub__(self, y: Any) -> RecurrentTensor:
        return binary("sub", y, self)

    def __mul__(self, y: Any) -> RecurrentTensor:
        return binary("mul", self, y)

    def __rmul__(self, y: Any) -> RecurrentTensor:
        return binary("mul", y, self)

    def __truediv__(self, y: Any) -> RecurrentTensor:
        return binary("div", self, y)

    def __rtruediv__(self, y: Any) -> RecurrentTensor:
        return binary("div", y, self)

    def __floordiv__(self, y: Any) -> RecurrentTensor:
        return self.floor_div(y)

    def __mod__(self, y: Any) -> RecurrentTensor:
        return self.remainder(y)

    def __pow__(self, y: Any) -> RecurrentTensor:
        return self.pow_(y)

    def __rpow__(self, y: Any) -> RecurrentTensor:
        return binary("pow", y, self)

    def __neg__(self) -> RecurrentTensor:
        return unary("neg", self)

    def __lt__(self, y: Any) -> RecurrentTensor:
        return binary("lt", self, y)

    def __le__(self, y: Any) -> RecurrentTensor:
        return binary("le", self, y)

    def __gt__(self, y: Any) -> RecurrentTensor:
        return binary("gt", self, y)

    def __ge__(self, y: Any) -> RecurrentTensor:
        return binary("ge", self, y)

    # ignore: elementwise, as in torch: a tensor, not object.__eq__'s bool
    def __eq__(self, y: Any) -> RecurrentTensor:  # type: ignore[override]
        return binary("eq", self, y)

    # ignore: as __eq__
    def __ne__(self, y: Any) -> RecurrentTensor:  # type: ignore[override]
        return binary("ne", self, y)

    def __and__(self, y: Any) -> RecurrentTensor:
        return binary("and", self, y)

    def __or__(self, y: Any) -> RecurrentTensor:
        return binary("or", self, y)

    def __rand__(self, y: Any) -> RecurrentTensor:
        return binary("and", y, self)

    def __ror__(self, y: Any) -> RecurrentTensor:
        return binary("or", y, self)

    def __abs__(self) -> RecurrentTensor:
        return unary("abs", self)

    def __invert__(self) -> RecurrentTensor:
        return unary("not", self)

    __hash__ = RTBase.__hash__

    # ---------------------------------------------------------------- named forms
    def add(self, y: Any) -> RecurrentTensor:
        return binary("add", self, y)

    def sub(self, y: Any) -> RecurrentTensor:
        return binary("sub", self, y)

    subtract = sub

    def mul(self, y: Any) -> RecurrentTensor:
        """Literal 0, 1 and -1 short-circuit (API §3.8)."""
        if isinstance(y, int | float) and not isinstance(y, bool) and y in (0, 1, -1):
            x = lift(self)
            dt = dtypes.upcast(x.dtype, dtypes.implied(y)) if not dtypes.is_float(x.dtype) \
                else x.dtype
            if y == 0:
                from tempo.api.ops.creation import zeros

                return zeros(x.shape, dt)
            return cast(x, dt) if y == 1 else -cast(x, dt)
        return binary("mul", self, y)

    multiply = mul

    def div(self, y: Any) -> RecurrentTensor:
        return binary("div", self, y)

    divide = div

    def floor_div(self, y: Any) -> RecurrentTensor:
        x, yy = _lift_pair(self, y)
        dt = dtypes.upcast(x.dtype, yy.dtype)
        if dtypes.is_bool(dt):
            raise DTypeError("floor division / remainder of bool tensors", site=user_site())
        q = binary("div", x, yy).floor()
        return q.cast(dt) if not dtypes.is_float(dt) else q

    floor_divide = floor_div

    def remainder(self, y: Any) -> RecurrentTensor:
        return self - self.floor_div(y) * y

    mod = remainder

    def pow_(self, exponent: Any) -> RecurrentTensor:
        """Literal exponents 0, 1, 2 and 0.5 are special-cased (API §3.8), with the dtype the
        general path gives (`int64 ** 2.0` is float32, as in torch)."""
        if isinstance(exponent, int | float) and not isinstance(exponent, bool) \
                and exponent in (0, 1, 2, 0.5):
            x = lift(self)
            dt = _scalar_dtype(exponent, x)
            if exponent == 0:
                from tempo.api.ops.creation import ones

                return ones(x.shape, dt)
            if exponent == 0.5:
                return unary("sqrt", x)
            x = cast(x, dt)
            return x if exponent == 1 else x.square()
        return binary("pow", self, exponent)

    def square(self) -> RecurrentTensor:
        """x * x; bools square as ints (as torch.square)."""
        x = lift(self)
        if dtypes.is_bool(x.dtype):
            x = cast(x, dtypes.default_int)
        return x * x

    squared = square

    def neg(self) -> RecurrentTensor:
        return unary("neg", self)

    negate = neg

    def exp(self) -> RecurrentTensor:
        return unary("exp", self)

    def ln(self) -> RecurrentTensor:
        return unary("ln", self)

    log = loge = ln

    def sqrt(self) -> RecurrentTensor:
        return unary("sqrt", self)

    def sin(self) -> RecurrentTensor:
        return unary("sin", self)

    def cos(self) -> RecurrentTensor:
        return unary("cos", self)

    def sigmoid(self) -> RecurrentTensor:
        return unary("sigmoid", self)

    def tanh(self) -> RecurrentTensor:
        return unary("tanh", self)

    def relu(self) -> RecurrentTensor:
        return unary("relu", self)

    def abs(self) -> RecurrentTensor:
        return unary("abs", self)

    def floor(self) -> RecurrentTensor:
        return unary("floor", self)

    def ceil(self) -> RecurrentTensor:
        return unary("ceil", self)

    def erf(self) -> RecurrentTensor:
        return unary("erf", self)

    def maximum(self, y: Any) -> RecurrentTensor:
        return binary("maximum", self, y)

    def minimum(self, y: Any) -> RecurrentTensor:
        return binary("minimum", self, y)

    def cast(self, dtype: DataTypeLike) -> RecurrentTensor:
        return cast(self, dtype)

    def where(self, true_data: Any, false_data: Any) -> RecurrentTensor:
        return where(self, true_data, false_data)

    def logical_not(self) -> RecurrentTensor:
        return unary("not", self)

    def less_than(self, y: Any) -> RecurrentTensor:
        return binary("lt", self, y)

    def greater_than(self, y: Any) -> RecurrentTensor:
        return binary("gt", self, y)

    def equals(self, y: Any) -> RecurrentTensor:
        return binary("eq", self, y)

    def not_equals(self, y: Any) -> RecurrentTensor:
        return binary("ne", self, y)

    def exp2(self) -> RecurrentTensor:
        return _float(self).mul(_LN2).exp()

    def exp10(self) -> RecurrentTensor:
        return _float(self).mul(_LN10).exp()

    def log2(self) -> RecurrentTensor:
        return unary("ln", self) / _LN2

    def log10(self) -> RecurrentTensor:
        return unary("ln", self) / _LN10

    def log_base(self, antilogarithm: Any) -> RecurrentTensor:
        """log of `antilogarithm` in base `self`: ln(a) / ln(base)."""
        return unary("ln", antilogarithm) / unary("ln", self)

    def tan(self) -> RecurrentTensor:
        return unary("tan", self)

    def reciprocal(self) -> RecurrentTensor:
        return binary("div", 1.0, _float(self))

    def round(self) -> RecurrentTensor:
        return unary("round", self)

    def trunc(self) -> RecurrentTensor:
        return unary("trunc", self)

    truncate = trunc
    ceiling = ceil

    def sign(self) -> RecurrentTensor:
        return unary("sign", self)

    def isnan(self) -> RecurrentTensor:
        return unary("isnan", self)

    def isinf(self) -> RecurrentTensor:
        return unary("isinf", self)

    def clip(self, lb: Any = None, ub: Any = None) -> RecurrentTensor:
        x = lift(self)
        if lb is not None:
            x = binary("maximum", x, lb)
        if ub is not None:
            x = binary("minimum", x, ub)
        return x

    clamp = clip

    def normalize(self, mean: Any, std: Any, eps: float = 1e-8) -> RecurrentTensor:
        """(x - mean) / (std + eps)."""
        return (self - mean) / (lift(std) + eps)

    def less_than_or_equal(self, y: Any) -> RecurrentTensor:
        return binary("le", self, y)

    def greater_than_or_equal(self, y: Any) -> RecurrentTensor:
        return binary("ge", self, y)

    def logical_and(self, y: Any) -> RecurrentTensor:
        return binary("and", self, y)

    def logical_or(self, y: Any) -> RecurrentTensor:
        return binary("or", self, y)

    not_ = logical_not


_LN2 = 0.6931471805599453
_LN10 = 2.302585092994046


def _float(x: Any) -> RecurrentTensor:
    x = lift(x)
    return x if dtypes.is_float(x.dtype) else cast(x, dtypes.least_upper_float(x.dtype))
