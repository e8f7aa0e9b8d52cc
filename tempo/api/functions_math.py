"""Arithmetic, activation, reduction and matmul ops as module functions (API.md §3.8).

Each is `lift(x).<op>(...)` with the method's parameters: written out, not generated at
import, so IDEs and mypy see them (`import tempo.api.recurrent_tensor as tpo`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import MaybeRecurrentTensor, lift
from tempo.core.dtype import DataTypeLike

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def add(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).add(y)


def sub(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).sub(y)


subtract = sub


def mul(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).mul(y)


multiply = mul


def div(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).div(y)


divide = div


def floor_div(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).floor_div(y)


floor_divide = floor_div


def remainder(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).remainder(y)


mod = remainder


def pow_(base: MaybeRecurrentTensor, exponent: Any) -> RecurrentTensor:
    return lift(base).pow_(exponent)


def square(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).square()


squared = square


def reciprocal(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).reciprocal()


def neg(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).neg()


negate = neg


def exp(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).exp()


def exp2(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).exp2()


def exp10(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).exp10()


def ln(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).ln()


log = ln


loge = ln


def log2(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).log2()


def log10(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).log10()


def log_base(base: MaybeRecurrentTensor, antilogarithm: Any) -> RecurrentTensor:
    return lift(base).log_base(antilogarithm)


def sqrt(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).sqrt()


def sin(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).sin()


def cos(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).cos()


def tan(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).tan()


def sigmoid(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).sigmoid()


def tanh(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).tanh()


def erf(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).erf()


def abs(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).abs()


def floor(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).floor()


def ceil(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).ceil()


ceiling = ceil


def round(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).round()


def trunc(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).trunc()


truncate = trunc


def sign(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).sign()


def isnan(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).isnan()


def isinf(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).isinf()


def cast(x: MaybeRecurrentTensor, dtype: DataTypeLike) -> RecurrentTensor:
    return lift(x).cast(dtype)


def maximum(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).maximum(y)


def minimum(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).minimum(y)


def clip(x: MaybeRecurrentTensor, lb: Any = None, ub: Any = None) -> RecurrentTensor:
    return lift(x).clip(lb, ub)


clamp = clip


def normalize(x: MaybeRecurrentTensor, mean: Any, std: Any, eps: float = 1e-08) -> RecurrentTensor:
    return lift(x).normalize(mean, std, eps)


def less_than(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).less_than(y)


def less_than_or_equal(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).less_than_or_equal(y)


def greater_than(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).greater_than(y)


def greater_than_or_equal(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).greater_than_or_equal(y)


def equals(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).equals(y)


def not_equals(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).not_equals(y)


def logical_and(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).logical_and(y)


def logical_or(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).logical_or(y)


def logical_not(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).logical_not()


not_ = logical_not


def relu(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).relu()


def swish(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).swish()


silu = swish


def elu(x: MaybeRecurrentTensor, alpha: float = 1.0) -> RecurrentTensor:
    return lift(x).elu(alpha)


def leakyrelu(x: MaybeRecurrentTensor, neg_slope: float = 0.01) -> RecurrentTensor:
    return lift(x).leakyrelu(neg_slope)


leaky_relu = leakyrelu


def softplus(
    x: MaybeRecurrentTensor,
    beta: float = 1.0,
    threshold: float = 20.0,
) -> RecurrentTensor:
    return lift(x).softplus(beta, threshold)


def mish(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).mish()


def softmax(x: MaybeRecurrentTensor, dim: int = -1, stable: bool = True, *,
            axis: int | None = None) -> RecurrentTensor:
    return lift(x).softmax(dim, stable, axis=axis)


def cross_entropy(pred: MaybeRecurrentTensor, target: Any, class_dim: int = -1) -> RecurrentTensor:
    return lift(pred).cross_entropy(target, class_dim)


def logsumexp(
    x: MaybeRecurrentTensor,
    sum_dims: int | Sequence[int] | None = None,
    keepdim: bool = False,
) -> RecurrentTensor:
    return lift(x).logsumexp(sum_dims, keepdim)


def sum(
    x: MaybeRecurrentTensor,
    dims: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dim: int | Sequence[int] | None = None,
    axis: int | Sequence[int] | None = None,
) -> RecurrentTensor:
    return lift(x).sum(dims, keepdim, dim=dim, axis=axis)


def mean(
    x: MaybeRecurrentTensor,
    dims: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dim: int | Sequence[int] | None = None,
    axis: int | Sequence[int] | None = None,
) -> RecurrentTensor:
    return lift(x).mean(dims, keepdim, dim=dim, axis=axis)


def std(
    x: MaybeRecurrentTensor,
    dims: int | Sequence[int] | None = None,
    correction: float = 1.0,
    keepdim: bool = False,
    *,
    dim: int | Sequence[int] | None = None,
    axis: int | Sequence[int] | None = None,
) -> RecurrentTensor:
    return lift(x).std(dims, correction, keepdim, dim=dim, axis=axis)


def var(
    x: MaybeRecurrentTensor,
    dims: int | Sequence[int] | None = None,
    correction: float = 1.0,
    keepdim: bool = False,
    *,
    dim: int | Sequence[int] | None = None,
    axis: int | Sequence[int] | None = None,
) -> RecurrentTensor:
    return lift(x).var(dims, correction, keepdim, dim=dim, axis=axis)


def prod(
    x: MaybeRecurrentTensor,
    dims: int | None = None,
    keepdim: bool = False,
) -> RecurrentTensor:
    return lift(x).prod(dims, keepdim)


def max(x: MaybeRecurrentTensor, dim: Any = None, keepdim: Any = False, *more: Any) -> Any:
    return lift(x).max(dim, keepdim, *more)


def min(x: MaybeRecurrentTensor, dim: Any = None, keepdim: Any = False, *more: Any) -> Any:
    return lift(x).min(dim, keepdim, *more)


def argmax(
    x: MaybeRecurrentTensor,
    dim: int | None = None,
    keepdim: bool = False,
) -> RecurrentTensor:
    return lift(x).argmax(dim, keepdim)


def argmin(
    x: MaybeRecurrentTensor,
    dim: int | None = None,
    keepdim: bool = False,
) -> RecurrentTensor:
    return lift(x).argmin(dim, keepdim)


def cumsum(x: MaybeRecurrentTensor, dim: int = -1) -> RecurrentTensor:
    return lift(x).cumsum(dim)


def cumprod(x: MaybeRecurrentTensor, dim: int = -1, positive: bool = False) -> RecurrentTensor:
    return lift(x).cumprod(dim, positive)


def l_norm(
    x: MaybeRecurrentTensor,
    n: float = 2,
    dims: int | Sequence[int] | None = None,
    keepdim: bool = False,
) -> RecurrentTensor:
    return lift(x).l_norm(n, dims, keepdim)


def discounted_sum(
    x: MaybeRecurrentTensor,
    gamma: Any,
    dim: int = 0,
    keepdim: bool = False,
) -> RecurrentTensor:
    return lift(x).discounted_sum(gamma, dim, keepdim)


def discounted_cum_sum(
    x: MaybeRecurrentTensor,
    gamma: Any,
    dim: int = 0,
    keep_symbolic_dim: bool = True,
) -> RecurrentTensor:
    return lift(x).discounted_cum_sum(gamma, dim, keep_symbolic_dim)


def sort(
    x: MaybeRecurrentTensor,
    dim: int = -1,
    descending: bool = False,
    stable: bool = False,
) -> Any:
    return lift(x).sort(dim, descending, stable)


def matmul(x: MaybeRecurrentTensor, y: Any) -> RecurrentTensor:
    return lift(x).matmul(y)


dot = matmul


def scaled_dot_product_attention(query: MaybeRecurrentTensor, key: Any, value: Any,
                                 attn_mask: Any = None, is_causal: bool = False,
                                 scale: float | None = None) -> RecurrentTensor:
    from tempo.api.ops.linalg import scaled_dot_product_attention as sdpa

    return sdpa(query, key, value, attn_mask, is_causal, scale)


__all__ = [
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "floor_div", "floor_divide",
    "remainder", "mod", "pow_", "square", "squared", "reciprocal", "neg", "negate", "exp", "exp2",
    "exp10", "ln", "log", "loge", "log2", "log10", "log_base", "sqrt", "sin", "cos", "tan",
    "sigmoid", "tanh", "erf", "abs", "floor", "ceil", "ceiling", "round", "trunc", "truncate",
    "sign", "isnan", "isinf", "cast", "maximum", "minimum", "clip", "clamp", "normalize",
    "less_than", "less_than_or_equal", "greater_than", "greater_than_or_equal", "equals",
    "not_equals", "logical_and", "logical_or", "logical_not", "not_", "relu", "swish", "silu",
    "elu", "leakyrelu", "leaky_relu", "softplus", "mish", "softmax", "cross_entropy", "logsumexp",
    "sum", "mean", "std", "var", "prod", "max", "min", "argmax", "argmin", "cumsum", "cumprod",
    "l_norm", "discounted_sum", "discounted_cum_sum", "sort", "matmul", "dot",
    "scaled_dot_product_attention",
]
