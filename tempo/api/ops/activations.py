"""Activation functions and losses, composed from elementwise and reduction primitives."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tempo.api.ops.elementwise import _float, unary
from tempo.api.tensor_base import lift

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


class ActivationOps:
    """Activation methods mixed into RecurrentTensor."""

    def swish(self) -> RecurrentTensor:
        """x * sigmoid(x) (a.k.a. SiLU)."""
        x = _float(self)
        return x * unary("sigmoid", x)

    silu = swish

    def elu(self, alpha: float = 1.0) -> RecurrentTensor:
        x = _float(self)
        return (x > 0).where(x, (x.minimum(0.0).exp() - 1.0) * alpha)

    def leakyrelu(self, neg_slope: float = 0.01) -> RecurrentTensor:
        x = _float(self)
        return (x > 0).where(x, x * neg_slope)

    leaky_relu = leakyrelu

    def softplus(self, beta: float = 1.0, threshold: float = 20.0) -> RecurrentTensor:
        """log(1 + exp(beta x)) / beta, linear above `threshold` (as torch) to avoid overflow."""
        x = _float(self)
        bx = x * beta
        soft = (bx.minimum(threshold).exp() + 1.0).ln() / beta
        return (bx > threshold).where(x, soft)

    def mish(self) -> RecurrentTensor:
        x = _float(self)
        return x * unary("tanh", x.softplus())

    def cross_entropy(self, target: Any, class_dim: int = -1) -> RecurrentTensor:
        """-sum(target * log(pred)) over `class_dim`; `self` holds probabilities."""
        return -(lift(target) * _float(self).ln()).sum(class_dim)
