"""JAX GPT-2-core decoder of §2.2: one jitted `lax.scan` over the decode, layers unrolled.

Attention always covers all seq_len cache positions with a -inf mask, so per-step work is
O(seq_len) in causal and window mode alike (the cost profile this baseline represents). Unlike
the original we carry the caches through the scan, so its outputs equal the Torch decoders'.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from tempo.bench.baselines.gpt2_core import (
    RMS_EPS,
    Gpt2CoreConfig,
    charge_decode,
    init_weights,
)
from tempo.bench.memory import DeviceMemoryAccountant


def _rms(x: jax.Array) -> jax.Array:
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + RMS_EPS)


def build_decode(c: Gpt2CoreConfig) -> Any:
    """The whole decode as a pure function (weights, x0) -> outputs (B, seq_len, d)."""
    B, H, dh, T, d = c.batch, c.n_heads, c.head_dim, c.seq_len, c.d_model
    scale = 1.0 / math.sqrt(d)
    idx = jnp.arange(T)

    def decode(w: dict[str, jax.Array], x0: jax.Array) -> jax.Array:
        kc = jnp.zeros((c.n_layers, B, H, T, dh), jnp.float32)
        vc = jnp.zeros((c.n_layers, B, H, T, dh), jnp.float32)

        def step(carry: Any, t: jax.Array) -> Any:
            x, kc, vc = carry
            mask = idx <= t
            if c.attn == "window":
                mask = mask & (idx > t - c.window)
            for n in range(c.n_layers):
                q = (x @ w["wq"][n]).reshape(B, H, dh)
                k = (x @ w["wk"][n]).reshape(1, B, H, 1, dh)
                v = (x @ w["wv"][n]).reshape(1, B, H, 1, dh)
                kc = jax.lax.dynamic_update_slice(kc, k, (n, 0, 0, t, 0))
                vc = jax.lax.dynamic_update_slice(vc, v, (n, 0, 0, t, 0))
                s = jnp.einsum("bhd,bhtd->bht", q, kc[n]) * scale
                p = jax.nn.softmax(jnp.where(mask, s, -jnp.inf), axis=-1)
                a = jnp.einsum("bht,bhtd->bhd", p, vc[n]).reshape(B, d) @ w["wo"][n]
                h = _rms(a + x)
                x = _rms(jax.nn.silu(h @ w["w1"][n]) @ w["w2"][n] + h)
            return (x, kc, vc), x

        _, xs = jax.lax.scan(step, (x0, kc, vc), jnp.arange(T - 1))
        return jnp.concatenate([x0[:, None], jnp.swapaxes(xs, 0, 1)], axis=1)

    return decode


class JaxGpt2Decoder:
    """`compile()` only wraps in `jax.jit`; XLA compiles in the first (warm-up) run."""

    def __init__(self, cfg: dict[str, Any], acct: DeviceMemoryAccountant,
                 weights: dict[str, np.ndarray] | None = None, x0: np.ndarray | None = None):
        self.c = Gpt2CoreConfig.from_dict(cfg)
        self.seq_len = self.c.seq_len
        self.acct = acct
        self.np_weights = weights if weights is not None else init_weights(self.c, "jax")
        self.x0 = x0 if x0 is not None else np.zeros((self.c.batch, self.c.d_model), np.float32)
        self.fn: Any = None
        self.out: np.ndarray | None = None

    def compile(self) -> None:
        self.fn = jax.jit(build_decode(self.c))

    def run(self) -> None:
        # Functional cache updates hold the carry in and out: charge the caches twice.
        charge_decode(self.acct, self.c, cache_copies=2)
        self.acct.tick(0)
        w = {k: jnp.asarray(v) for k, v in self.np_weights.items()}  # re-allocated per run
        out = self.fn(w, jnp.asarray(self.x0))
        out.block_until_ready()
        self.acct.tick(self.c.seq_len - 1)
        self.out = np.asarray(out)
        self.acct.free_all()


def make_jax(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> JaxGpt2Decoder:
    """`jax` system of E1/E3."""
    return JaxGpt2Decoder(cfg, acct)
