"""Matrix products. The primitive is torch.matmul; the API's squeeze of a size-1 row of x
and a size-1 column of y (both >= 2-d, API §3.8) is applied here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import lift, record1
from tempo.core import ops
from tempo.core.errors import ShapeError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _is_one(d: Any) -> bool:
    return isinstance(d, int) and d == 1


def matmul(x: Any, y: Any) -> RecurrentTensor:
    x, y = lift(x), lift(y)
    if x.ndim == 0 or y.ndim == 0:
        raise ShapeError(f"matmul of a scalar: {x.shape} @ {y.shape}", site=user_site())
    out = record1(ops.MatMulOp, [x, y])
    if x.ndim >= 2 and y.ndim >= 2:
        squeeze = []
        if _is_one(x.shape[-2]):
            squeeze.append(out.ndim - 2)
        if _is_one(y.shape[-1]):
            squeeze.append(out.ndim - 1)
        if squeeze:
            out = out.squeeze(squeeze)
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
