"""Activation modules (`Relu`, `Swish`, ...) and `ActivationFunction.from_`.

The maths is composed from primitive elementwise ops so that autodiff needs no new rules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tempo.api.nn.module import Module

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _lift(x: Any) -> RecurrentTensor:
    from tempo.api.recurrent_tensor import RecurrentTensor

    return RecurrentTensor.lift(x)


def swish(x: Any) -> RecurrentTensor:
    x = _lift(x)
    return x * x.sigmoid()


def elu(x: Any, alpha: float = 1.0) -> RecurrentTensor:
    x = _lift(x)
    neg = (x.minimum(0.0).exp() - 1.0) * alpha
    return (x > 0.0).where(x, neg)


def leakyrelu(x: Any, negative_slope: float = 0.01) -> RecurrentTensor:
    x = _lift(x)
    return x.relu() - (-x).relu() * negative_slope


def softplus(x: Any, beta: float = 1.0) -> RecurrentTensor:
    """log(1 + exp(beta x)) / beta in the overflow-free form relu(z) + log1p(exp(-|z|))."""
    z = _lift(x) * beta if beta != 1 else _lift(x)
    out = z.relu() + ((-z.abs()).exp() + 1.0).ln()
    return out / beta if beta != 1 else out


def mish(x: Any) -> RecurrentTensor:
    x = _lift(x)
    return x * softplus(x).tanh()


class ActivationFunction(Module):
    """A parameter-free module applying one activation."""

    def __init__(self) -> None:
        super().__init__()

    @staticmethod
    def from_(x: str | type[ActivationFunction] | ActivationFunction) -> ActivationFunction:
        if isinstance(x, ActivationFunction):
            return x
        if isinstance(x, type) and issubclass(x, ActivationFunction):
            return x()
        key = str(x).lower().replace("_", "")
        if key not in _BY_NAME:
            raise ValueError(f"unknown activation {x!r}; known: {sorted(_BY_NAME)}")
        return _BY_NAME[key]()


class Relu(ActivationFunction):
    def forward(self, x: Any) -> RecurrentTensor:
        return _lift(x).relu()


class Sigmoid(ActivationFunction):
    def forward(self, x: Any) -> RecurrentTensor:
        return _lift(x).sigmoid()


class Tanh(ActivationFunction):
    def forward(self, x: Any) -> RecurrentTensor:
        return _lift(x).tanh()


class Swish(ActivationFunction):
    def forward(self, x: Any) -> RecurrentTensor:
        return swish(x)


class Softmax(ActivationFunction):
    def __init__(self, dim: int = -1, stable: bool = True) -> None:
        super().__init__()
        self.dim, self.stable = dim, stable

    def forward(self, x: Any) -> RecurrentTensor:
        return _lift(x).softmax(self.dim, self.stable)


class Elu(ActivationFunction):
    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self.alpha = alpha

    def forward(self, x: Any) -> RecurrentTensor:
        return elu(x, self.alpha)


class LeakyRelu(ActivationFunction):
    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: Any) -> RecurrentTensor:
        return leakyrelu(x, self.negative_slope)


class Mish(ActivationFunction):
    def forward(self, x: Any) -> RecurrentTensor:
        return mish(x)


class Softplus(ActivationFunction):
    def __init__(self, beta: float = 1.0) -> None:
        super().__init__()
        self.beta = beta

    def forward(self, x: Any) -> RecurrentTensor:
        return softplus(x, self.beta)


_BY_NAME: dict[str, type[ActivationFunction]] = {
    "relu": Relu,
    "sigmoid": Sigmoid,
    "tanh": Tanh,
    "swish": Swish,
    "silu": Swish,
    "softmax": Softmax,
    "elu": Elu,
    "leakyrelu": LeakyRelu,
    "mish": Mish,
    "softplus": Softplus,
}
