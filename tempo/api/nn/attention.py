"""`MultiHeadAttention` over a temporal dimension: each point is one token, and keys and
values are read from earlier points through an index pattern (causal, window, custom)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.nn.init import InitFn
from tempo.api.nn.linear import Linear
from tempo.api.nn.module import Module
from tempo.api.nn.rope import RopeScalingParams, RotaryPositionalEmbeddings
from tempo.api.tensor_base import label
from tempo.core import index_expr as ie
from tempo.core import naming
from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike
from tempo.core.errors import ArgumentError, ShapeError, TempoError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _four(fns: InitFn | Sequence[InitFn | None] | None) -> list[InitFn | None]:
    if fns is None or callable(fns):
        return [fns] * 4
    fs = list(fns)
    if len(fs) == 1:
        return fs * 4
    if len(fs) != 4:
        raise ValueError(f"init functions: give one or four, got {len(fs)}")
    return fs


class MultiHeadAttention(Module):
    """q·k/sqrt(head_dim) softmax attention with q/k/v/output projections; GQA shares each
    KV head among num_heads/num_kv_heads query heads; optional RoPE on q and k."""

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        seq_len: ie.Symbol,
        dropout: float = 0.0,
        bias: bool = False,
        apply_rope: bool = False,
        dtype: DataTypeLike = None,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        w_init_funs: InitFn | Sequence[InitFn] | None = None,
        b_init_funs: InitFn | Sequence[InitFn] | None = None,
        rope_theta: float = 10000.0,
        rope_scaling_params: RopeScalingParams | None = None,
        num_kv_heads: int | None = None,
    ) -> None:
        super().__init__(domain, independent_domain)
        kv = num_kv_heads or num_heads
        if embed_dim % num_heads or num_heads % kv:
            raise ShapeError(
                f"embed_dim {embed_dim}, num_heads {num_heads}, num_kv_heads {kv}: "
                "heads must divide embed_dim and kv heads must divide heads",
                site=user_site(),
            )
        if not 0.0 <= dropout < 1.0:
            raise TempoError(f"attention dropout must be in [0, 1), got {dropout}",
                             site=user_site())
        self.dropout = dropout
        self.embed_dim, self.num_heads, self.num_kv_heads = embed_dim, num_heads, kv
        self.head_dim = embed_dim // num_heads
        self.seq_len = seq_len
        ws, bs = _four(w_init_funs), _four(b_init_funs)
        kv_dim = kv * self.head_dim
        args = (dtype, domain, independent_domain)
        self.q_proj = Linear(embed_dim, embed_dim, bias, *args, ws[0], bs[0])
        self.k_proj = Linear(embed_dim, kv_dim, bias, *args, ws[1], bs[1])
        self.v_proj = Linear(embed_dim, kv_dim, bias, *args, ws[2], bs[2])
        self.output_proj = Linear(embed_dim, embed_dim, bias, *args, ws[3], bs[3])
        self.rope = (
            RotaryPositionalEmbeddings(
                self.head_dim, seq_len, rope_theta, rope_scaling_params=rope_scaling_params
            )
            if apply_rope
            else None
        )

    def _visible(self, x: RecurrentTensor, pattern: Any) -> RecurrentTensor:
        t = self.seq_len
        dom = x.unindexed_domain
        if not dom.has_dim(t):
            raise ShapeError(
                f"the attention input {label(x)} has domain {naming.domain_word(dom)}, "
                f"without the sequence dim {t}",
                site=user_site(),
            )
        key = tuple(pattern if v.name == t.name else v for v in dom.variables)
        return x[key]

    def forward(self, x: Any, pattern: Any = None) -> RecurrentTensor:
        from tempo.api.recurrent_tensor import RecurrentTensor as RT

        x = RT.lift(x)
        t, hd, kv = self.seq_len, self.head_dim, self.num_kv_heads
        rep = self.num_heads // kv
        pat = ie.slice_(0, t + 1) if pattern is None else pattern
        q = self.q_proj(x).reshape((self.num_heads, hd))
        k = self.k_proj(x).reshape((kv, hd))
        v = self.v_proj(x).reshape((kv, hd))
        if self.rope is not None:
            q, k = self.rope(q), self.rope(k)
        keys = self._visible(k.ident(), pat)  # (S, kv, hd)
        vals = self._visible(v.ident(), pat)
        qg = q.reshape((kv, rep, hd)).unsqueeze(0)  # (1, kv, rep, hd)
        scores = (qg * keys.unsqueeze(2)).sum(3) * (1.0 / math.sqrt(hd))  # (S, kv, rep)
        attn = scores.softmax(0)
        if self.dropout and self.training:
            # torch's attention dropout: an i.i.d. mask per (query, key, head), rescaled.
            keep = RT.random(attn.shape, attn.dtype, domain=x.unindexed_domain) >= self.dropout
            attn = keep.where(attn * (1.0 / (1.0 - self.dropout)), 0.0)
        out = (attn.unsqueeze(3) * vals.unsqueeze(2)).sum(0)  # (kv, rep, hd)
        return self.output_proj(out.reshape((self.embed_dim,)))

    def causal_forward(self, x: Any) -> RecurrentTensor:
        return self.forward(x)

    def windowed_forward(self, x: Any, window_size: int) -> RecurrentTensor:
        t = self.seq_len
        if isinstance(window_size, bool) or not isinstance(window_size, int) or window_size < 1:
            raise ArgumentError(f"windowed_forward needs a window of at least 1 token (the "
                                f"query's own), got window_size={window_size!r}",
                                site=user_site())
        return self.forward(x, ie.slice_(ie.max(0, t - window_size + 1), t + 1))
