"""The GPT-2 *core* of BENCHMARKS.md §2.1 as a library model, with the layer as a dimension.

No tokens: decoding is continuous (step t's input is step t-1's output of the last block);
each block is post-norm with a weightless RMSNorm and SiLU, attention scales by
sqrt(d_model). Recurrences: `s[0] = x0; s[t+1] = x_out[t, L-1]`, `x_in[t, 0] = s[t];
x_in[t, l+1] = x_out[t, l]`. Attention reads the key/value history `k[lo:t+1, l]` (lo = 0
causal, max(0, t-W+1) window), which the storage pass keeps in a block store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tempo.core import index_expr as ie
from tempo.core.dtype import dtypes
from tempo.core.errors import ShapeError, TempoError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor

RMS_EPS = 1e-8
WEIGHT_SHAPES = {"wq": ("d", "d"), "wk": ("d", "d"), "wv": ("d", "d"), "wo": ("d", "d"),
                 "w1": ("d", "f"), "w2": ("f", "d")}


class Gpt2Core:
    """`decode(x0)` returns the stream `s` over `(t,)` of shape `(batch, d_model)`.

    `weights` maps `wq, wk, wv, wo` `(L, d, d)`, `w1` `(L, d, d_ff)`, `w2` `(L, d_ff, d)` to
    stacked per-layer arrays (numpy or torch, used as `x @ w`)."""

    def __init__(self, n_layers: int, n_heads: int, d_model: int, d_ff: int,
                 temporal_dim: ie.Symbol, weights: Mapping[str, Any],
                 window: int | None = None) -> None:
        from tempo.api.tempo_context_manager import get_active_ctx_manager

        if d_model % n_heads:
            raise ShapeError(f"d_model {d_model} is not a multiple of n_heads {n_heads}",
                             site=user_site())
        dims = {"d": d_model, "f": d_ff}
        for k, (a, b) in WEIGHT_SHAPES.items():
            want = (n_layers, dims[a], dims[b])
            if k not in weights or tuple(weights[k].shape) != want:
                got = tuple(weights[k].shape) if k in weights else "missing"
                raise TempoError(f"Gpt2Core weight {k!r} must have shape {want}, got {got}",
                                 site=user_site())
        self.n_layers, self.n_heads, self.d, self.d_ff = n_layers, n_heads, d_model, d_ff
        self.t, self.window = temporal_dim, window
        self.layer, self.layer_bound = get_active_ctx_manager().new_perm_var(n_layers)
        self.weights = dict(weights)

    def _weight(self, name: str) -> RecurrentTensor:
        import torch

        from tempo.api.recurrent_tensor import RecurrentTensor as RT

        w = torch.as_tensor(self.weights[name]).float()
        lv = self.layer
        return RT.source_with_ts_udf(lambda ts: w[ts[lv]], tuple(w.shape[1:]), dtypes.float32,
                                     domain=(lv,))

    def decode(self, x0: Any) -> RecurrentTensor:
        from tempo.api.recurrent_tensor import RecurrentTensor as RT

        x0 = RT.lift(x0)
        if x0.ndim != 2 or tuple(x0.shape)[1] != self.d:
            raise ShapeError(f"Gpt2Core.decode needs x0 of shape (batch, {self.d}), got "
                             f"{tuple(x0.shape)}", site=user_site())
        B, d, H = int(x0.shape[0]), self.d, self.n_heads
        dh = d // H
        t, lv, LB = self.t, self.layer, self.layer_bound
        wq, wk, wv, wo, w1, w2 = (self._weight(k) for k in WEIGHT_SHAPES)
        s = RT.placeholder((B, d), dtypes.float32, domain=(t,))
        xi = RT.placeholder((B, d), dtypes.float32, domain=(t, lv))
        xi[t, 0] = s
        q = (xi @ wq).reshape((B, H, 1, dh))
        k = (xi @ wk).reshape((B, H, dh))
        v = (xi @ wv).reshape((B, H, dh))
        lo = 0 if self.window is None else ie.max(0, t - self.window + 1)
        keys = k[lo: t + 1, lv].permute((1, 2, 3, 0))       # (B, H, dh, S)
        vals = v[lo: t + 1, lv].permute((1, 2, 0, 3))       # (B, H, S, dh)
        p = ((q @ keys) * (1.0 / math.sqrt(d))).softmax(-1)  # (B, H, S)
        o = (p.unsqueeze(-2) @ vals).reshape((B, d))
        h = _rms(o @ wo + xi)
        xo = _rms((h @ w1).silu() @ w2 + h)
        xi[t, lv + 1] = xo
        s[0] = x0
        s[t + 1] = xo[t, LB - 1]
        return s


def _rms(x: Any) -> Any:
    """x / sqrt(mean(x²) + eps) over the model dim: the fused RMS norm primitive (one
    backend call, torch's F.rms_norm), not five elementwise and reduction ops."""
    from tempo.api.nn.norm import RMSNorm

    return RMSNorm(int(x.shape[-1]), eps=RMS_EPS, elementwise_affine=False)(x)
