"""The GPT-2-small *core* of BENCHMARKS.md §2.1, shared by every decoder baseline.

No tokens: decoding is continuous (step t's input is step t-1's output of the last block), the
block is post-norm with a weightless RMSNorm (eps 1e-8) and SiLU, and attention scales by
sqrt(d_model). This module holds the config and the weight initialisers only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tempo.bench.memory import DeviceMemoryAccountant, nbytes_of

RMS_EPS = 1e-8
WEIGHT_NAMES = ("wq", "wk", "wv", "wo", "w1", "w2")


@dataclass(frozen=True)
class Gpt2CoreConfig:
    """Model and decode shape; `window` is used when `attn == "window"`."""

    n_layers: int = 4
    n_heads: int = 4
    d_model: int = 128
    d_ff: int = 512
    batch: int = 4
    seq_len: int = 256
    attn: str = "causal"
    window: int = 128
    seed: int = 0

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @staticmethod
    def from_dict(cfg: dict[str, Any]) -> Gpt2CoreConfig:
        keys = Gpt2CoreConfig.__dataclass_fields__
        return Gpt2CoreConfig(**{k: v for k, v in cfg.items() if k in keys})

    def kv_lo(self, t: int) -> int:
        """First attended position at step t: 0 (causal) or max(0, t-W+1) (window)."""
        return 0 if self.attn == "causal" else max(0, t - self.window + 1)


def init_weights(c: Gpt2CoreConfig, style: str, seed: int | None = None) -> dict[str, np.ndarray]:
    """Stacked per-layer weights. `style="torch"`: Q/K/V ~ randn, W_O/FF ~ N(0, .02);
    `style="jax"`: all N(0,1)*0.02 (§2.1). Biases are zero everywhere, so they are omitted."""
    rng = np.random.default_rng(c.seed if seed is None else seed)
    L, d, f = c.n_layers, c.d_model, c.d_ff
    qkv_std = 1.0 if style == "torch" else 0.02
    shapes = {"wq": (L, d, d), "wk": (L, d, d), "wv": (L, d, d), "wo": (L, d, d),
              "w1": (L, d, f), "w2": (L, f, d)}
    return {k: (rng.standard_normal(s) * (qkv_std if k in ("wq", "wk", "wv") else 0.02))
            .astype(np.float32) for k, s in shapes.items()}


def weight_bytes(c: Gpt2CoreConfig) -> int:
    """Bytes of all weights (fp32)."""
    d, f = c.d_model, c.d_ff
    return c.n_layers * 4 * (4 * d * d + 2 * d * f)


def charge_decode(acct: DeviceMemoryAccountant, c: Gpt2CoreConfig, cache_copies: int = 1) -> None:
    """Charge weights, full-length K/V caches (x copies) and the output buffer."""
    acct.alloc("weights", weight_bytes(c))
    kv = nbytes_of(c.n_layers, 2, c.batch, c.n_heads, c.seq_len, c.head_dim)
    acct.alloc("kv_cache", kv * cache_copies)
    acct.alloc("output", nbytes_of(c.batch, c.seq_len, c.d_model))


def reference_decode(w: dict[str, np.ndarray], x0: np.ndarray, c: Gpt2CoreConfig) -> np.ndarray:
    """Plain numpy float64 decode without a cache (recomputes K/V): the independent reference
    the tests compare all decoders with. Returns (B, seq_len, d)."""
    B, d, H, dh = c.batch, c.d_model, c.n_heads, c.head_dim
    ws = {k: v.astype(np.float64) for k, v in w.items()}
    xs = [x0.astype(np.float64)]
    inputs: list[list[np.ndarray]] = [[] for _ in range(c.n_layers)]
    for t in range(c.seq_len - 1):
        x = xs[-1]
        for n in range(c.n_layers):
            inputs[n].append(x)
            X = np.stack(inputs[n][c.kv_lo(t):], axis=1)  # (B, n, d)
            q = (x @ ws["wq"][n]).reshape(B, H, dh)
            k = (X @ ws["wk"][n]).reshape(B, -1, H, dh)
            v = (X @ ws["wv"][n]).reshape(B, -1, H, dh)
            s = np.einsum("bhd,bnhd->bhn", q, k) / np.sqrt(d)
            p = np.exp(s - s.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            a = np.einsum("bhn,bnhd->bhd", p, v).reshape(B, d) @ ws["wo"][n]
            h = _rms(a + x)
            z = h @ ws["w1"][n]
            x = _rms((z / (1 + np.exp(-z))) @ ws["w2"][n] + h)
        xs.append(x)
    return np.stack(xs, axis=1)


def _rms(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + RMS_EPS)
