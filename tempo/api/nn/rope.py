"""Rotary positional embeddings (torchtune's interleaved-pair RoPE) with llama3 scaling.

Angles are computed in float64 from the position symbol, so no table is stored."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.nn.module import Module
from tempo.core import index_expr as ie
from tempo.core.domain import DomainLike
from tempo.core.dtype import dtypes
from tempo.core.errors import ShapeError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


@dataclass(frozen=True)
class RopeScalingParams:
    factor: float = 32.0
    high_freq_factor: float = 4.0
    low_freq_factor: float = 1.0
    original_max_position_embeddings: int = 8192
    rope_type: str = "llama3"


def rope_frequencies(dim: int, base: float, scaling: RopeScalingParams | None) -> np.ndarray:
    """base^(-2k/dim) for k < dim/2, rescaled as Meta's llama3 `apply_scaling` when given."""
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64)[: dim // 2] / dim))
    if scaling is None:
        return freqs
    if scaling.rope_type != "llama3":
        raise ValueError(f"unsupported rope scaling {scaling.rope_type!r}")
    low_wl = scaling.original_max_position_embeddings / scaling.low_freq_factor
    high_wl = scaling.original_max_position_embeddings / scaling.high_freq_factor
    out = []
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < high_wl:
            out.append(f)
        elif wl > low_wl:
            out.append(f / scaling.factor)
        else:
            s = (scaling.original_max_position_embeddings / wl - scaling.low_freq_factor) / (
                scaling.high_freq_factor - scaling.low_freq_factor
            )
            out.append((1 - s) * f / scaling.factor + s * f)
    return np.asarray(out, dtype=np.float64)


class RotaryPositionalEmbeddings(Module):
    """Rotate pairs (x[2k], x[2k+1]) of a (heads, dim) point by t·freq_k."""

    def __init__(
        self,
        dim: int,
        t: ie.Symbol,
        base: float = 10000,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        rope_scaling_params: RopeScalingParams | None = None,
    ) -> None:
        super().__init__(domain, independent_domain)
        if dim % 2:
            raise ShapeError(f"RoPE needs an even dim, got {dim}", site=user_site())
        self.dim, self.t = dim, t
        self.freqs = rope_frequencies(dim, base, rope_scaling_params)

    def forward(self, x: Any, pos: Any = None) -> RecurrentTensor:
        """`pos` defaults to the symbol `t` (an index expression or tensor also works)."""
        from tempo.api.recurrent_tensor import RecurrentTensor as RT

        x = RT.lift(x)
        if tuple(x.shape)[-1:] != (self.dim,):
            raise ShapeError(
                f"RoPE of dim {self.dim} applied to shape {tuple(x.shape)}", site=user_site()
            )
        p = RT.lift(self.t if pos is None else pos).cast(dtypes.float64)
        ang = p * RT.const(self.freqs)
        cos, sin = ang.cos(), ang.sin()
        pairs = x.cast(dtypes.float64).reshape((*tuple(x.shape)[:-1], self.dim // 2, 2))
        a = pairs.slice_dim(pairs.ndim - 1, 0, 1)
        b = pairs.slice_dim(pairs.ndim - 1, 1, 2)
        cos, sin = cos.unsqueeze(-1), sin.unsqueeze(-1)
        out = RT.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
        return out.reshape(tuple(x.shape)).cast(x.dtype)
