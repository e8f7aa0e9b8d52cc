"""LayerNorm that keeps its output (not its input) for backward.

The output y = gamma * xhat + beta is saved by the next layer anyway, so recovering
xhat = (y - beta) / gamma in backward frees the input. rstd is kept in fp32 (one float per row).
When some |gamma| is tiny the recovery is ill-conditioned (error ~ ulp(y) / |gamma|), so the call
falls back to saving the input, like the stock layer, and counts it in :data:`FALLBACK_CALLS`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from tempo.memsave import chunks
from tempo.memsave.first_order import first_order_only

#: Forward calls that saved the input because min|gamma| was below the threshold.
FALLBACK_CALLS: list[int] = [0]


def needs_fallback(weight: torch.Tensor, tol: float | None) -> bool:
    """Whether some |gamma| is below the threshold (`tol`, default 1e-3 * max(1, max|gamma|))
    where the output-based backward loses precision. One host read per forward: min and
    max are compared on the weight's device first (each read waits for a GPU). The answer
    is not cached per weight version: writes through `.data` do not bump it."""
    a = weight.detach().abs().float()  # half weights: compare in fp32
    limit = a.max().clamp(min=1.0) * 1e-3 if tol is None else tol
    return bool(a.min() < limit)


def _acc_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


class InplaceLayerNormFunction(torch.autograd.Function):
    """Autograd function: saves (y, gamma, beta, rstd) or, in the fallback, (x, mean, rstd)."""

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        normalized_shape: tuple[int, ...],
        weight: torch.Tensor | None,
        bias: torch.Tensor | None,
        eps: float,
        gamma_tol: float | None,
    ) -> torch.Tensor:
        y, mean, rstd = torch.native_layer_norm(x, normalized_shape, weight, bias, eps)
        ctx.normalized_shape = normalized_shape
        ctx.has_weight = weight is not None
        ctx.has_bias = bias is not None
        ctx.fallback = weight is not None and x.numel() > 0 and needs_fallback(weight, gamma_tol)
        if ctx.fallback:
            FALLBACK_CALLS[0] += 1
            ctx.save_for_backward(x, mean, rstd, weight, bias)
        else:
            ctx.save_for_backward(y, weight, bias, rstd.to(_acc_dtype(x.dtype)))
        return y

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        first_order_only("InplaceLayerNorm", "nn.LayerNorm")
        need_x, _, need_w, need_b = ctx.needs_input_grad[:4]
        if ctx.fallback:
            x, mean, rstd, weight, bias = ctx.saved_tensors
            dx, dw, db = torch.ops.aten.native_layer_norm_backward(
                dy, x, ctx.normalized_shape, mean, rstd, weight, bias, [need_x, need_w, need_b]
            )
            return dx, None, dw, db, None, None
        y, weight, bias, rstd = ctx.saved_tensors
        return (*_backward_from_output(ctx, dy, y, weight, bias, rstd), None, None)


def _backward_from_output(
    ctx: Any,
    dy: torch.Tensor,
    y: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    rstd: torch.Tensor,
) -> tuple[torch.Tensor | None, None, torch.Tensor | None, torch.Tensor | None]:
    """dx, dgamma, dbeta, processed a block of rows at a time so no M x N temporary exists."""
    need_x, _, need_w, need_b = ctx.needs_input_grad[:4]
    n = math.prod(ctx.normalized_shape)
    m = y.numel() // n if n else 0
    acc = _acc_dtype(y.dtype)
    y2 = y.reshape(m, n)
    dy2 = dy.reshape(m, n)
    r2 = rstd.reshape(m, 1)
    w = weight.reshape(n).to(acc) if weight is not None else None
    b = bias.reshape(n).to(acc) if bias is not None else None
    dx = torch.empty((m, n), dtype=dy.dtype, device=dy.device) if need_x else None
    dw = torch.zeros(n, dtype=acc, device=dy.device) if need_w else None
    db = torch.zeros(n, dtype=acc, device=dy.device) if need_b else None
    for r0, r1 in chunks.ranges(m, chunks.rows_per_chunk(n)):
        g = dy2[r0:r1].to(acc)
        xhat = y2[r0:r1].to(acc)
        if b is not None:
            xhat = xhat - b
        if w is not None:
            xhat = xhat / w
        if dw is not None:
            dw += (g * xhat).sum(0)
        if db is not None:
            db += g.sum(0)
        if dx is not None:
            if w is not None:
                g = g * w
            mean_g = g.mean(-1, keepdim=True)
            mean_gx = (g * xhat).mean(-1, keepdim=True)
            dx[r0:r1] = (r2[r0:r1] * (g - mean_g - xhat * mean_gx)).to(dy.dtype)
    shape = ctx.normalized_shape
    return (
        dx.view(dy.shape) if dx is not None else None,
        None,
        dw.view(shape).to(weight.dtype) if dw is not None and weight is not None else None,
        db.view(shape).to(bias.dtype) if db is not None and bias is not None else None,
    )


def inplace_layer_norm(
    x: torch.Tensor,
    normalized_shape: tuple[int, ...] | list[int] | int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-5,
    gamma_tol: float | None = None,
) -> torch.Tensor:
    """Functional form of :class:`InplaceLayerNorm` (same signature as ``F.layer_norm``)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return InplaceLayerNormFunction.apply(x, tuple(normalized_shape), weight, bias, eps, gamma_tol)


class InplaceLayerNorm(nn.LayerNorm):
    """Drop-in ``nn.LayerNorm`` that saves its output instead of its input for backward."""

    def __init__(
        self,
        normalized_shape: int | tuple[int, ...] | list[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        gamma_tol: float | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(normalized_shape, eps, elementwise_affine, bias, device, dtype)
        self.gamma_tol = gamma_tol

    @classmethod
    def from_layer_norm(cls, ln: nn.LayerNorm) -> InplaceLayerNorm:
        """Wrap an existing LayerNorm, sharing its Parameter objects (optimizers stay valid)."""
        new = cls.__new__(cls)
        nn.Module.__init__(new)
        new.normalized_shape = tuple(ln.normalized_shape)
        new.eps = ln.eps
        new.elementwise_affine = ln.elementwise_affine
        new.weight = ln.weight
        new.bias = ln.bias
        new.gamma_tol = None
        new.train(ln.training)
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.is_grad_enabled():
            return nn.functional.layer_norm(
                x, self.normalized_shape, self.weight, self.bias, self.eps
            )
        return inplace_layer_norm(
            x, self.normalized_shape, self.weight, self.bias, self.eps, self.gamma_tol
        )
