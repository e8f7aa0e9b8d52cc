"""Weight initialisers following the `InitFn` protocol (`fn(shape=, dtype=, domain=)`).

The random initialisers are the API's own (`tempo.api.ops.init` / `ops.random`, seeded by
the config); this module adds the protocol, `ones`/`zeros` and `const_init`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from tempo.api.ops.init import (
    glorot_uniform,
    kaiming_normal,
    kaiming_uniform,
    linear_init_uniform,
    orthogonal_init,
    scaled_uniform,
)
from tempo.api.ops.random import normal, uniform
from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike
from tempo.core.shape import Shape, ShapeLike
from tempo.runtime.host_arrays import to_host

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor

__all__ = [
    "InitFn",
    "const_init",
    "glorot_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "linear_init_uniform",
    "normal",
    "ones",
    "orthogonal_init",
    "scaled_uniform",
    "uniform",
    "zeros",
]


class InitFn(Protocol):
    """A parameter initialiser; modules call it with keywords only."""

    def __call__(
        self, *, shape: ShapeLike, dtype: DataTypeLike, domain: DomainLike
    ) -> RecurrentTensor: ...


def _rt() -> Any:
    from tempo.api.recurrent_tensor import RecurrentTensor

    return RecurrentTensor


def ones(
    shape: ShapeLike, dtype: DataTypeLike = None, domain: DomainLike = None
) -> RecurrentTensor:
    return _rt().ones(shape, dtype)


def zeros(
    shape: ShapeLike, dtype: DataTypeLike = None, domain: DomainLike = None
) -> RecurrentTensor:
    return _rt().zeros(shape, dtype)


def const_init(value: Any) -> InitFn:
    """An InitFn returning a fixed array (e.g. weights copied from a torch module)."""
    arr = to_host(value)

    def fn(
        *, shape: ShapeLike, dtype: DataTypeLike = None, domain: DomainLike = None
    ) -> RecurrentTensor:
        from tempo.core.dtype import dtypes

        want = tuple(Shape.from_(shape).as_static())
        if tuple(arr.shape) != want:
            raise ValueError(
                f"const_init: value of shape {arr.shape} for a parameter of shape {want}"
            )
        dt = dtypes.from_(dtype) if dtype is not None else dtypes.default_float
        return _rt().const(arr.astype(dtypes.to_np(dt)), dtype=dt)

    return fn
