"""Reductions over spatial dims (reduce the domain by slicing it into a spatial dim first)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import record, record1
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.errors import ShapeError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _dims(dims: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    if dims is None:
        return tuple(range(ndim))
    ds = [dims] if isinstance(dims, int) else list(dims)
    try:
        return tuple(sorted({ops.norm_dim(d, ndim) for d in ds}))
    except ShapeError as exc:
        raise ShapeError(exc.args[0], site=user_site()) from None


class ReduceOps:
    """Reduction methods mixed into RecurrentTensor."""

    def sum(self, dims: int | Sequence[int] | None = None, keepdim: bool = False) -> RecurrentTensor:
        ds = _dims(dims, self.ndim)  # type: ignore[attr-defined]
        if not ds:
            return self.ident()  # type: ignore[attr-defined]
        return record1(ops.SumOp, [self], dims=ds, keepdim=keepdim)

    def mean(self, dims: int | Sequence[int] | None = None, keepdim: bool = False) -> RecurrentTensor:
        ds = _dims(dims, self.ndim)  # type: ignore[attr-defined]
        n: Any = 1
        for d in ds:
            n = n * self.shape[d]  # type: ignore[attr-defined]
        x = self if dtypes.is_float(self.dtype) else self.cast(dtypes.default_float)  # type: ignore[attr-defined]
        total = x.sum(ds, keepdim)
        if isinstance(n, int):
            return total / n  # type: ignore[operator]
        from tempo.api.ops.creation import from_expr

        return total / from_expr(n).cast(total.dtype)  # type: ignore[operator]

    def max(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """Without `dim`, the max over all dims; with `dim`, (values, indices) (API §7.8)."""
        if dim is None:
            flat = self.flatten()  # type: ignore[attr-defined]
            return record(ops.MaxOp, [flat], dim=0, keepdim=False)[0]
        d = _dims(dim, self.ndim)[0]  # type: ignore[attr-defined]
        vals, idx = record(ops.MaxOp, [self], dim=d, keepdim=keepdim)
        return vals, idx

    def min(self, dim: int | None = None, keepdim: bool = False) -> Any:
        neg = -self  # type: ignore[operator]
        if dim is None:
            return -neg.max()
        vals, idx = neg.max(dim, keepdim)
        return -vals, idx

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> RecurrentTensor:
        if dim is None:
            return record(ops.MaxOp, [self.flatten()], dim=0, keepdim=False)[1]  # type: ignore[attr-defined]
        return self.max(dim, keepdim)[1]

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> RecurrentTensor:
        return (-self).argmax(dim, keepdim)  # type: ignore[operator]

    def cumsum(self, dim: int = -1) -> RecurrentTensor:
        d = _dims(dim, self.ndim)[0]  # type: ignore[attr-defined]
        return record1(ops.CumsumOp, [self], dim=d)

    def softmax(self, dim: int = -1, stable: bool = True) -> RecurrentTensor:
        """exp(x - max) / sum, computed in at least float32 and cast back."""
        orig = self.dtype  # type: ignore[attr-defined]
        x = self if dtypes.is_float(orig) and orig.repr_bytes >= 4 else self.cast(dtypes.float32)  # type: ignore[attr-defined]
        d = _dims(dim, x.ndim)[0]
        if stable:
            x = x - x.max(d, keepdim=True)[0].detach()
        e = x.exp()
        out = e / e.sum(d, keepdim=True)
        return out.cast(orig) if dtypes.is_float(orig) else out

    def logsumexp(self, sum_dims: int | Sequence[int] | None = None, keepdim: bool = False) -> RecurrentTensor:
        ds = _dims(sum_dims, self.ndim)  # type: ignore[attr-defined]
        m = self
        for d in ds:
            m = m.max(d, keepdim=True)[0]
        m = m.detach()
        out = (self - m).exp().sum(ds, keepdim=True).ln() + m  # type: ignore[operator]
        return out if keepdim else out.squeeze(ds)
