"""Matrix products. The primitive is torch.matmul; the API's squeeze of a size-1 row of x
and a size-1 column of y (both >= 2-d, API §3.8) is applied here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import active_ctx, lift, record1
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.errors import DTypeError, ShapeError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _is_one(d: Any) -> bool:
    return isinstance(d, int) and d == 1


def matmul(x: Any, y: Any) -> RecurrentTensor:
    """torch.matmul, then the API's squeeze; with `enable_matmul_ops=False` in the config
    (read when the op is recorded) a broadcast multiply and a sum with the same result."""
    x, y = lift(x), lift(y)
    if x.ndim == 0 or y.ndim == 0:
        raise ShapeError(f"matmul of a scalar: {x.shape} @ {y.shape}", site=user_site())
    if active_ctx().execution_config.enable_matmul_ops:
        out = record1(ops.MatMulOp, [x, y])
    else:
        out = _mul_sum(x, y)
    if x.ndim >= 2 and y.ndim >= 2:
        squeeze = []
        if _is_one(x.shape[-2]):
            squeeze.append(out.ndim - 2)
        if _is_one(y.shape[-1]):
            squeeze.append(out.ndim - 1)
        if squeeze:
            out = out.squeeze(squeeze)
    return out


def _mul_sum(x: Any, y: Any) -> RecurrentTensor:
    """x @ y as (x[..., n, k, 1] * y[..., 1, k, m]).sum(-2), 1-d operands promoted as in
    torch.matmul; the dtype is the matmul's (the sum would widen narrow ints)."""
    dt = dtypes.upcast(x.dtype, y.dtype)
    if dtypes.is_bool(dt):
        raise DTypeError("matmul of bool tensors (cast them to an int or float dtype)",
                         site=user_site())
    a = x.unsqueeze(0) if x.ndim == 1 else x
    b = y.unsqueeze(-1) if y.ndim == 1 else y
    out = (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2).cast(dt)
    if x.ndim == 1:
        out = out.squeeze(-2)
    if y.ndim == 1:
        out = out.squeeze(-1)
    return out


class LinalgOps:
    """Linear-algebra methods mixed into RecurrentTensor."""

    def matmul(self, y: Any) -> RecurrentTensor:
        return matmul(self, y)

    dot = matmul

    def __matmul__(self, y: Any) -> RecurrentTensor:
        return matmul(self, y)

    def __rmatmul__(self, y: Any) -> RecurrentTensor:
        return matmul(y, self)
