"""`LayerNorm` and `RMSNorm` over the trailing `normalized_shape` dims (torch semantics).

Both compute in at least float32 and cast back, so half-precision models stay stable."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.nn import init as initf
from tempo.api.nn.init import InitFn
from tempo.api.nn.module import Module
from tempo.api.tensor_base import record1
from tempo.core import ops
from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike, dtypes
from tempo.core.errors import ShapeError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _shape(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


class _Norm(Module):
    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float,
        affine: bool,
        dtype: DataTypeLike,
        domain: DomainLike,
        independent_domain: DomainLike,
        w_init_fun: InitFn | None,
    ) -> None:
        super().__init__(domain, independent_domain)
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.dt = dtypes.from_(dtype) if dtype is not None else dtypes.default_float
        self.w: RecurrentTensor | None = None
        if affine:
            self.w = self.param_from_init(
                (w_init_fun or initf.ones)(shape=self.normalized_shape, dtype=self.dt, domain=None)
            )

    def _prep(self, x: Any) -> tuple[RecurrentTensor, tuple[int, ...]]:
        from tempo.api.recurrent_tensor import RecurrentTensor

        x = RecurrentTensor.lift(x)
        n = len(self.normalized_shape)
        if tuple(x.shape)[x.ndim - n :] != self.normalized_shape:
            raise ShapeError(
                f"{type(self).__name__}{self.normalized_shape} applied to shape {tuple(x.shape)}",
                site=user_site(),
            )
        dims = tuple(range(x.ndim - n, x.ndim))
        orig = x.dtype
        xf = x if orig.repr_bytes >= 4 and dtypes.is_float(orig) else x.cast(dtypes.float32)
        return xf, dims


class RMSNorm(_Norm):
    """x / sqrt(mean(x², trailing dims) + eps) * w, matching torch.nn.RMSNorm."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-7,
        elementwise_affine: bool = True,
        dtype: DataTypeLike = None,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        w_init_fun: InitFn | None = None,
    ) -> None:
        super().__init__(
            normalized_shape, eps, elementwise_affine, dtype, domain, independent_domain, w_init_fun
        )

    def forward(self, x: Any) -> RecurrentTensor:
        xf, dims = self._prep(x)
        out = record1(ops.NormOp, [xf], n_dims=len(dims), eps=self.eps, center=False)
        out = out.cast(self.dt) if out.dtype != self.dt else out
        return out * self.w if self.w is not None else out


class LayerNorm(_Norm):
    """(x - mean) / sqrt(var + eps) * w + b with biased variance, matching torch.nn.LayerNorm."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        dtype: DataTypeLike = None,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        w_init_fun: InitFn | None = None,
        b_init_fun: InitFn | None = None,
    ) -> None:
        super().__init__(
            normalized_shape, eps, elementwise_affine, dtype, domain, independent_domain, w_init_fun
        )
        self.b: RecurrentTensor | None = None
        if elementwise_affine and bias:
            self.b = self.bias_from_init(
                (b_init_fun or initf.zeros)(shape=self.normalized_shape, dtype=self.dt, domain=None)
            )

    def forward(self, x: Any) -> RecurrentTensor:
        xf, dims = self._prep(x)
        out = record1(ops.NormOp, [xf], n_dims=len(dims), eps=self.eps, center=True)
        out = out.cast(self.dt) if out.dtype != self.dt else out
        if self.w is not None:
            out = out * self.w
        return out + self.b if self.b is not None else out
