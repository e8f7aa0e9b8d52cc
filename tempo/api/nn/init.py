"""Weight initialisers following the `InitFn` protocol (`fn(shape=, dtype=, domain=)`).

They compose `RecurrentTensor.random`, so they work before the op library grows its own."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike
from tempo.core.shape import Shape, ShapeLike

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


class InitFn(Protocol):
    """A parameter initialiser; modules call it with keywords only."""

    def __call__(
        self, *, shape: ShapeLike, dtype: DataTypeLike, domain: DomainLike
    ) -> RecurrentTensor: ...


def _rt() -> Any:
    from tempo.api.recurrent_tensor import RecurrentTensor

    return RecurrentTensor


def _static(shape: ShapeLike) -> tuple[int, ...]:
    return tuple(Shape.from_(shape).as_static())


def uniform(
    shape: ShapeLike, low: float, high: float, dtype: DataTypeLike = None, domain: DomainLike = None
) -> RecurrentTensor:
    """U[low, high) of `shape`, fresh per point of `domain`."""
    u = _rt().random(shape=shape, dtype=dtype, domain=domain, requires_grad=False)
    return u * (high - low) + low


def normal(
    shape: ShapeLike = (),
    dtype: DataTypeLike = None,
    domain: DomainLike = None,
    mean: float = 0.0,
    std: float = 1.0,
) -> RecurrentTensor:
    """Box–Muller over two uniform draws (1-u keeps the log finite)."""
    rt = _rt()
    u1 = rt.random(shape=shape, dtype=dtype, domain=domain, requires_grad=False)
    u2 = rt.random(shape=shape, dtype=dtype, domain=domain, requires_grad=False)
    z = ((1.0 - u1).ln() * -2.0).sqrt() * (u2 * (2.0 * math.pi)).cos()
    return z * std + mean if (std != 1.0 or mean != 0.0) else z


def _fan_in(shape: Sequence[int]) -> int:
    if len(shape) < 2:
        return max(1, shape[0] if shape else 1)
    return shape[1] * int(np.prod(shape[2:])) if len(shape) > 2 else shape[1]


def linear_init_uniform(
    shape: ShapeLike,
    dtype: DataTypeLike = None,
    domain: DomainLike = None,
    num_input_features: int | None = None,
) -> RecurrentTensor:
    """U(±1/sqrt(fan_in)), torch.nn.Linear's default; fan_in defaults to shape[1]."""
    fan = num_input_features if num_input_features is not None else _fan_in(_static(shape))
    b = 1.0 / math.sqrt(fan)
    return uniform(shape, -b, b, dtype, domain)


def glorot_uniform(
    shape: ShapeLike, dtype: DataTypeLike = None, domain: DomainLike = None
) -> RecurrentTensor:
    s = _static(shape)
    fan_in, fan_out = _fan_in(s), (s[0] * int(np.prod(s[2:])) if len(s) > 1 else s[0])
    b = math.sqrt(6.0 / (fan_in + fan_out))
    return uniform(shape, -b, b, dtype, domain)


def kaiming_uniform(
    shape: ShapeLike, a: float = 0.01, dtype: DataTypeLike = None, domain: DomainLike = None
) -> RecurrentTensor:
    gain = math.sqrt(2.0 / (1 + a * a))
    b = gain * math.sqrt(3.0 / _fan_in(_static(shape)))
    return uniform(shape, -b, b, dtype, domain)


def kaiming_normal(
    shape: ShapeLike, dtype: DataTypeLike = None, a: float = 0.01, domain: DomainLike = None
) -> RecurrentTensor:
    gain = math.sqrt(2.0 / (1 + a * a))
    return normal(shape, dtype, domain, std=gain / math.sqrt(_fan_in(_static(shape))))


def ones(
    shape: ShapeLike, dtype: DataTypeLike = None, domain: DomainLike = None
) -> RecurrentTensor:
    return _rt().ones(shape, dtype)


def zeros(
    shape: ShapeLike, dtype: DataTypeLike = None, domain: DomainLike = None
) -> RecurrentTensor:
    return _rt().zeros(shape, dtype)


def orthogonal_init(
    shape: ShapeLike,
    dtype: DataTypeLike = None,
    domain: DomainLike = None,
    gain: float = 1.41421356237,
) -> RecurrentTensor:
    """torch's orthogonal init computed once at record time (a constant)."""
    import torch

    w = torch.empty(_static(shape))
    torch.nn.init.orthogonal_(w, gain=gain)
    return const_init(w.numpy())(shape=shape, dtype=dtype, domain=domain)


def const_init(value: Any) -> InitFn:
    """An InitFn returning a fixed array (e.g. weights copied from a torch module)."""
    arr = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)

    def fn(
        *, shape: ShapeLike, dtype: DataTypeLike = None, domain: DomainLike = None
    ) -> RecurrentTensor:
        from tempo.core.dtype import dtypes

        want = _static(shape)
        if tuple(arr.shape) != want:
            raise ValueError(
                f"const_init: value of shape {arr.shape} for a parameter of shape {want}"
            )
        dt = dtypes.from_(dtype) if dtype is not None else dtypes.default_float
        return _rt().const(arr.astype(dtypes.to_np(dt)), dtype=dt)

    return fn  # type: ignore[return-value]
