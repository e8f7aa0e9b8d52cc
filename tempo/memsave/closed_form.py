"""Closed-form saved-for-backward bytes of one post-LN BERT layer (MEMSAVE.md section 4).

Masks are bool (1 byte) as GPU dropout saves them, or 1/8 byte when bit-packed; LN row
statistics are fp32 (mean and rstd for the stock LN, rstd only for the in-place one).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LayerShape:
    """Batch, sequence, hidden, heads, intermediate width and activation bytes."""

    batch: int
    seq: int
    hidden: int
    heads: int
    intermediate: int
    itemsize: int = 4


def layer_bytes(
    shape: LayerShape, techniques: tuple[str, ...] | set[str] = (), mask_format: str = "byte"
) -> float:
    """Bytes one layer keeps for backward with the given memsave techniques applied."""
    b, S, H, A, I, s = (
        shape.batch,
        shape.seq,
        shape.hidden,
        shape.heads,
        shape.intermediate,
        shape.itemsize,
    )
    m = 1.0 if mask_format == "byte" else 0.125
    bsh, bsi, bas2, rows = b * S * H, b * S * I, b * A * S * S, b * S
    # input x, q, k, v, context, LN1 in, LN1 out, LN2 in; GELU in/out; two hidden-dropout masks
    total: float = 8 * s * bsh + 2 * s * bsi + 2 * bsh
    total += 2 * s * bas2 + bas2  # P, D, attention dropout mask
    total += 4 * 4 * rows  # mean and rstd of both LNs
    if "gelu" in techniques:
        total += -s * bsi + m * bsi  # GELU input replaced by the branch mask
    if "layernorm" in techniques:
        total += -2 * s * bsh - 2 * 4 * rows  # both LN inputs and means
    if "attention" in techniques:
        total += -s * bas2 + (m - 1.0) * bas2  # D dropped; mask maybe packed
    return total
