"""softmax -> dropout -> @V as one autograd function that does not keep the dropped probabilities.

Stock autograd keeps P (for softmax), the dropout mask, D = dropout(P) (for the matmul) and V.
Here only P, the mask (bit-packed by default) and V are kept; D = P * mask / (1 - p) is rebuilt in
backward, a block of batch*head rows at a time so that D, dD and dP are never full size.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from tempo.memsave import chunks
from tempo.memsave.bitpack import load_mask, store_mask
from tempo.memsave.first_order import first_order_only


def dropout_keep_mask(
    shape: torch.Size | tuple[int, ...],
    p: float,
    device: torch.device | str | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """A Bernoulli(1 - p) bool keep-mask (what dropout multiplies by before scaling)."""
    return torch.rand(shape, device=device, generator=generator) >= p


class SoftmaxDropoutMatmulFunction(torch.autograd.Function):
    """O = (softmax(S) * keep / (1 - p)) @ V; saves softmax(S), the keep mask and V."""

    @staticmethod
    def forward(
        ctx: Any,
        scores: torch.Tensor,
        v: torch.Tensor,
        p: float,
        keep: torch.Tensor | None,
        mask_format: str,
    ) -> torch.Tensor:
        probs = torch.softmax(scores, dim=-1)
        ctx.p = p
        ctx.mask_format = mask_format
        ctx.use_mask = keep is not None
        if keep is None:
            dropped = probs
            stored = torch.empty(0, dtype=torch.uint8, device=scores.device)
        else:
            keep = keep.expand(probs.shape)
            dropped = probs * keep.to(probs.dtype) * (1.0 / (1.0 - p))
            stored = store_mask(keep, mask_format)
        out = torch.matmul(dropped, v)
        ctx.save_for_backward(probs, stored, v)
        return out

    @staticmethod
    def backward(ctx: Any, d_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        first_order_only("softmax_dropout_matmul", "softmax then matmul")
        probs, stored, v = ctx.saved_tensors
        need_s, need_v = ctx.needs_input_grad[:2]
        sq, sk, dv_dim = probs.shape[-2], probs.shape[-1], v.shape[-1]
        lead = probs.shape[:-2]
        p3 = probs.reshape(-1, sq, sk)
        v3 = v.expand(*lead, sk, dv_dim).reshape(-1, sk, dv_dim)
        do3 = d_out.reshape(-1, sq, dv_dim)
        nb = p3.shape[0]
        ds = torch.empty_like(p3) if need_s else None
        dv = torch.empty(v3.shape, dtype=v.dtype, device=v.device) if need_v else None
        scale = 1.0 / (1.0 - ctx.p) if ctx.use_mask else 1.0
        for b0, b1 in chunks.ranges(nb, chunks.rows_per_chunk(sq * sk, 1 << 20)):
            pc = p3[b0:b1]
            if ctx.use_mask:
                keep = load_mask(stored, ctx.mask_format, b0 * sq * sk, b1 * sq * sk)
                keep_scaled = keep.view(b1 - b0, sq, sk).to(pc.dtype) * scale
                dc = pc * keep_scaled
            else:
                keep_scaled, dc = None, pc
            if dv is not None:
                dv[b0:b1] = torch.matmul(dc.transpose(-1, -2), do3[b0:b1])
            if ds is not None:
                dp = torch.matmul(do3[b0:b1], v3[b0:b1].transpose(-1, -2))
                if keep_scaled is not None:
                    dp = dp * keep_scaled
                ds[b0:b1] = torch._softmax_backward_data(dp, pc, -1, pc.dtype)
        ds_out = ds.view(probs.shape) if ds is not None else None
        dv_out = None
        if dv is not None:
            dv_out = dv.view(*lead, sk, dv_dim)
            if dv_out.shape != v.shape:  # V was broadcast over leading dims
                dv_out = dv_out.sum_to_size(v.shape)
        return ds_out, dv_out, None, None, None


def softmax_dropout_matmul(
    scores: torch.Tensor,
    v: torch.Tensor,
    p: float = 0.0,
    training: bool = True,
    mask: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    mask_format: str = "bit",
) -> torch.Tensor:
    """``dropout(softmax(scores, -1), p) @ v`` keeping only softmax(scores), the mask and v.

    ``mask`` is an explicit bool keep-mask (True = kept), e.g. to reproduce a stock run; otherwise
    one is drawn from ``generator``. With ``p == 0`` or ``training=False`` no mask is used.
    """
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p}")
    keep: torch.Tensor | None = None
    if training and p > 0.0:
        shape = (*scores.shape[:-1], scores.shape[-1])
        keep = mask if mask is not None else dropout_keep_mask(shape, p, scores.device, generator)
        keep = keep.to(torch.bool)
    if not (torch.is_grad_enabled() and (scores.requires_grad or v.requires_grad)):
        probs = torch.softmax(scores, dim=-1)
        if keep is not None:
            probs = probs * keep.to(probs.dtype) * (1.0 / (1.0 - p))
        return torch.matmul(probs, v)
    return SoftmaxDropoutMatmulFunction.apply(scores, v, p, keep, mask_format)


def fused_attention_probs_matmul(
    scores: torch.Tensor,
    v: torch.Tensor,
    p: float = 0.0,
    mask: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    *,
    training: bool = True,
    mask_format: str = "bit",
) -> torch.Tensor:
    """MEMSAVE.md 7.1's signature ``(scores, v, p, mask=None, generator=None)`` for
    :func:`softmax_dropout_matmul`: its fourth positional argument is the keep-mask (as an
    alias of softmax_dropout_matmul, whose fourth is ``training``, a positional mask was
    taken for the training flag and raised 'Boolean value of Tensor ... is ambiguous')."""
    return softmax_dropout_matmul(scores, v, p, training, mask, generator, mask_format)


class SoftmaxDropoutMatmul(nn.Module):
    """Module form: ``forward(scores, v)`` = dropout(softmax(scores)) @ v with this module's p."""

    def __init__(self, p: float = 0.1, mask_format: str = "bit") -> None:
        super().__init__()
        self.p = p
        self.mask_format = mask_format

    def forward(
        self,
        scores: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        return softmax_dropout_matmul(
            scores, v, self.p, self.training, mask, generator, self.mask_format
        )

    def extra_repr(self) -> str:
        return f"p={self.p}, mask_format={self.mask_format!r}"
