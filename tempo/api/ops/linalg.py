"""Matrix products. The primitive is torch.matmul; the API's squeeze of a size-1 row of x
and a size-1 column of y (both >= 2-d, API §3.8) is applied here."""

from __future__ import annotations

import math
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


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None,
                                 is_causal: bool = False,
                                 scale: float | None = None) -> RecurrentTensor:
    """softmax(query @ key^T * scale + mask) @ value over the last two dims, as torch's
    `F.scaled_dot_product_attention`: query (..., L, E), key (..., S, E), value
    (..., S, Ev) with equal leading dims; `attn_mask` broadcasts to (..., L, S), boolean
    (True: attend) or float (added to the scores); `scale` defaults to 1/sqrt(E). One
    primitive: the backend's fused attention kernel, with its own exact gradient."""
    q, k, v = lift(query), lift(key), lift(value)
    dt = dtypes.upcast(q.dtype, k.dtype, v.dtype)
    if not dtypes.is_float(dt):
        dt = dtypes.float32
    q, k, v = (x.cast(dt) for x in (q, k, v))
    if q.ndim < 2:
        raise ShapeError(f"attention needs query (..., L, E), got shape {q.shape}",
                         site=user_site())
    e = q.shape[-1]
    if scale is None:
        if not isinstance(e, int):
            raise ShapeError(f"attention with a symbolic head size {e} needs an explicit "
                             "scale", site=user_site())
        scale = 1.0 / math.sqrt(e)
    ins = [q, k, v]
    if attn_mask is not None:
        m = lift(attn_mask)
        ins.append(m if dtypes.is_bool(m.dtype) else m.cast(dt))
    return record1(ops.AttentionOp, ins, scale=float(scale), causal=bool(is_causal),
                   masked=attn_mask is not None)


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
