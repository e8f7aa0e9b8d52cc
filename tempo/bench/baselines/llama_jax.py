"""JAX-like tiny-Llama decoder of §7.5: one jitted step per token over full-length caches.

Each step writes position `pos` of preallocated (L, B, T, kv, dh) caches with
`dynamic_update_slice` and attends over all T positions with a mask (`idx <= pos`, and
`idx > pos - W` in window mode), so per-step work is O(T) in both modes — the cost profile
this baseline represents. Caches are donated to the step, so XLA may update them in place.
Same protocol and weights as the eager Torch decoder (greedy, no prefill, prompt positions
forced), so its tokens equal Torch's.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from tempo.bench.baselines.llama_core import (
    TINY_LLAMA,
    ensure_weights,
    kv_bytes,
    load_state,
    prompts,
    weight_bytes,
    weights_dir,
)
from tempo.bench.memory import DeviceMemoryAccountant


def _rms(x: jax.Array, w: jax.Array, eps: float) -> jax.Array:
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rot_half(x: jax.Array) -> jax.Array:
    h = x.shape[-1] // 2
    return jnp.concatenate((-x[..., h:], x[..., :h]), axis=-1)


def stacked_params(state: dict[str, Any], n_layers: int) -> dict[str, jax.Array]:
    """HF-named torch weights as per-layer stacks, transposed for `x @ w`."""
    p = "model.layers."
    names = {"wq": "self_attn.q_proj", "wk": "self_attn.k_proj", "wv": "self_attn.v_proj",
             "wo": "self_attn.o_proj", "w1": "mlp.gate_proj", "w3": "mlp.up_proj",
             "w2": "mlp.down_proj"}
    out = {k: jnp.asarray(np.stack([state[f"{p}{n}.{v}.weight"].numpy().T
                                    for n in range(n_layers)])) for k, v in names.items()}
    out["an"] = jnp.asarray(np.stack([state[f"{p}{n}.input_layernorm.weight"].numpy()
                                      for n in range(n_layers)]))
    out["fn"] = jnp.asarray(np.stack([state[f"{p}{n}.post_attention_layernorm.weight"].numpy()
                                      for n in range(n_layers)]))
    out["emb"] = jnp.asarray(state["model.embed_tokens.weight"].numpy())
    out["norm"] = jnp.asarray(state["model.norm.weight"].numpy())
    head = state.get("lm_head.weight", state["model.embed_tokens.weight"])
    out["head"] = jnp.asarray(head.numpy().T)
    return out


def build_step(n_layers: int, T: int, attn: str, window: int) -> Any:
    """step(params, kc, vc, tok, pos) -> (next greedy token, logits, kc, vc)."""
    H, kv = TINY_LLAMA["num_attention_heads"], TINY_LLAMA["num_key_value_heads"]
    dh = TINY_LLAMA["hidden_size"] // H
    eps = TINY_LLAMA["rms_norm_eps"]
    inv = 1.0 / (TINY_LLAMA["rope_theta"] ** (np.arange(0, dh, 2, dtype=np.float32) / dh))
    idx = jnp.arange(T)

    def step(w: dict[str, jax.Array], kc: jax.Array, vc: jax.Array, tok: jax.Array,
             pos: jax.Array) -> Any:
        B = tok.shape[0]
        ang = pos.astype(jnp.float32) * jnp.asarray(inv)
        emb = jnp.concatenate((ang, ang))
        cos, sin = jnp.cos(emb), jnp.sin(emb)
        mask = idx <= pos
        if attn == "window":
            mask = mask & (idx > pos - window)
        h = w["emb"][tok]
        zero = jnp.zeros((), pos.dtype)  # every index of one dtype (also under jax x64)
        for n in range(n_layers):
            at = (jnp.asarray(n, pos.dtype), zero, pos, zero, zero)
            x = _rms(h, w["an"][n], eps)
            q = (x @ w["wq"][n]).reshape(B, H, dh)
            k = (x @ w["wk"][n]).reshape(B, kv, dh)
            v = (x @ w["wv"][n]).reshape(B, kv, dh)
            q = q * cos + _rot_half(q) * sin
            k = k * cos + _rot_half(k) * sin
            kc = jax.lax.dynamic_update_slice(kc, k[None, :, None], at)
            vc = jax.lax.dynamic_update_slice(vc, v[None, :, None], at)
            keys = jnp.repeat(kc[n], H // kv, axis=2)  # (B, T, H, dh)
            vals = jnp.repeat(vc[n], H // kv, axis=2)
            s = jnp.einsum("bhd,bthd->bht", q, keys) / math.sqrt(dh)
            p = jax.nn.softmax(jnp.where(mask, s, -jnp.inf), axis=-1)
            o = jnp.einsum("bht,bthd->bhd", p, vals).reshape(B, H * dh)
            h = h + o @ w["wo"][n]
            x = _rms(h, w["fn"][n], eps)
            h = h + (jax.nn.silu(x @ w["w1"][n]) * (x @ w["w3"][n])) @ w["w2"][n]
        logits = _rms(h, w["norm"], eps) @ w["head"]
        return jnp.argmax(logits, axis=-1), logits, kc, vc

    return step


class JaxLlamaDecoder:
    """`compile()` wraps the step in `jax.jit`; XLA compiles during the warm-up run."""

    def __init__(self, cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> None:
        self.cfg, self.acct = cfg, acct
        self.seq_len = int(cfg["seq_len"])
        self.L = int(cfg.get("n_layers", 4))
        wdir = ensure_weights(weights_dir(cfg), self.L, max(4096, self.seq_len))
        self.w = stacked_params(load_state(wdir), self.L)
        ids, _ = prompts(int(cfg["batch"]), TINY_LLAMA["vocab_size"], int(cfg.get("seed", 0)))
        self.prompt = ids
        self.step: Any = None
        self.tokens: np.ndarray | None = None

    def compile(self) -> None:
        fn = build_step(self.L, self.seq_len, self.cfg.get("attn", "causal"),
                        int(self.cfg.get("window", 128)))
        self.step = jax.jit(fn, donate_argnums=(1, 2))

    def run(self) -> None:
        B, T = int(self.cfg["batch"]), self.seq_len
        H, kv = TINY_LLAMA["num_attention_heads"], TINY_LLAMA["num_key_value_heads"]
        dh = TINY_LLAMA["hidden_size"] // H
        self.acct.alloc("weights", weight_bytes(self.L))
        self.acct.alloc("kv_cache", kv_bytes(self.L, B, T))
        kc = jnp.zeros((self.L, B, T, kv, dh), jnp.float32)
        vc = jnp.zeros((self.L, B, T, kv, dh), jnp.float32)
        P = self.prompt.shape[1]
        out = np.zeros((B, T), np.int64)
        tok = jnp.asarray(self.prompt[:, 0])
        for pos in range(T):
            out[:, pos] = np.asarray(tok)
            if pos == T - 1:
                break
            nxt, _, kc, vc = self.step(self.w, kc, vc, tok, jnp.int32(pos))
            tok = jnp.asarray(self.prompt[:, pos + 1]) if pos + 1 < P else nxt
            self.acct.tick(pos)
        self.tokens = out
        self.acct.free_all()


def make_jax_llama(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> JaxLlamaDecoder:
    """`jax` system of E4."""
    return JaxLlamaDecoder(cfg, acct)
