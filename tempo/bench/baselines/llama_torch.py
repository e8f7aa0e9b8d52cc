"""Eager Torch tiny-Llama decoder of §7.5, in the style of Meta's reference code.

Preallocated (B, T, kv, dh) caches, slicing to `:pos+1` (or the last W), a materialised
`repeat_kv`, fp32 softmax, logits + argmax, and no prefill: prompt positions are forced back to
the prompt token. It loads the same safetensors weights as the HF baseline, so logits match.
"""

from __future__ import annotations

import math
from typing import Any

import torch

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


def _rms(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def _rot_half(x: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class EagerLlama:
    """Per-token decoder; `step(tokens, pos)` returns logits (B, vocab)."""

    def __init__(self, state: dict[str, torch.Tensor], n_layers: int, batch: int, seq_len: int,
                 attn: str = "causal", window: int = 128) -> None:
        self.s, self.L, self.B, self.T = state, n_layers, batch, seq_len
        self.attn, self.W = attn, window
        self.H, self.kv = TINY_LLAMA["num_attention_heads"], TINY_LLAMA["num_key_value_heads"]
        self.dh = TINY_LLAMA["hidden_size"] // self.H
        self.eps = TINY_LLAMA["rms_norm_eps"]
        inv = 1.0 / (TINY_LLAMA["rope_theta"] ** (torch.arange(0, self.dh, 2).float() / self.dh))
        ang = torch.outer(torch.arange(seq_len).float(), inv)
        emb = torch.cat((ang, ang), dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()
        self.ck = [torch.zeros(batch, seq_len, self.kv, self.dh) for _ in range(n_layers)]
        self.cv = [torch.zeros(batch, seq_len, self.kv, self.dh) for _ in range(n_layers)]
        self.emb = state["model.embed_tokens.weight"]
        self.lm_head = state.get("lm_head.weight", self.emb)

    def step(self, tokens: torch.Tensor, pos: int) -> torch.Tensor:
        B, H, kv, dh, p = self.B, self.H, self.kv, self.dh, "model.layers."
        h = self.emb[tokens]
        cos, sin = self.cos[pos], self.sin[pos]
        lo = 0 if self.attn == "causal" else max(0, pos - self.W + 1)
        for n in range(self.L):
            s = self.s
            x = _rms(h, s[f"{p}{n}.input_layernorm.weight"], self.eps)
            q = (x @ s[f"{p}{n}.self_attn.q_proj.weight"].T).view(B, H, dh)
            k = (x @ s[f"{p}{n}.self_attn.k_proj.weight"].T).view(B, kv, dh)
            v = (x @ s[f"{p}{n}.self_attn.v_proj.weight"].T).view(B, kv, dh)
            q = q * cos + _rot_half(q) * sin
            k = k * cos + _rot_half(k) * sin
            self.ck[n][:, pos] = k
            self.cv[n][:, pos] = v
            keys = self.ck[n][:, lo:pos + 1]
            vals = self.cv[n][:, lo:pos + 1]
            keys = keys.repeat_interleave(H // kv, dim=2).transpose(1, 2)  # materialised repeat_kv
            vals = vals.repeat_interleave(H // kv, dim=2).transpose(1, 2)
            sc = torch.matmul(q.unsqueeze(2), keys.transpose(2, 3)) / math.sqrt(dh)
            pr = torch.softmax(sc.float(), dim=-1).type_as(q)
            o = torch.matmul(pr, vals).reshape(B, H * dh)
            h = h + o @ s[f"{p}{n}.self_attn.o_proj.weight"].T
            x = _rms(h, s[f"{p}{n}.post_attention_layernorm.weight"], self.eps)
            g = torch.nn.functional.silu(x @ s[f"{p}{n}.mlp.gate_proj.weight"].T)
            u = x @ s[f"{p}{n}.mlp.up_proj.weight"].T
            h = h + (g * u) @ s[f"{p}{n}.mlp.down_proj.weight"].T
        h = _rms(h, self.s["model.norm.weight"], self.eps)
        return h @ self.lm_head.T


class TorchLlamaDecoder:
    """`run()` = one greedy decode of seq_len positions (prompt included), no prefill."""

    def __init__(self, cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> None:
        self.cfg, self.acct = cfg, acct
        self.seq_len = int(cfg["seq_len"])
        self.L = int(cfg.get("n_layers", 4))
        wdir = ensure_weights(weights_dir(cfg), self.L, max(4096, self.seq_len))
        self.state = load_state(wdir)
        ids, _ = prompts(int(cfg["batch"]), TINY_LLAMA["vocab_size"], int(cfg.get("seed", 0)))
        self.prompt = torch.from_numpy(ids)
        self.tokens: torch.Tensor | None = None

    def compile(self) -> None:
        """Eager torch: nothing to compile."""

    @torch.no_grad()
    def run(self) -> None:
        B, T = int(self.cfg["batch"]), self.seq_len
        self.acct.alloc("weights", weight_bytes(self.L))
        self.acct.alloc("kv_cache", kv_bytes(self.L, B, T))
        m = EagerLlama(self.state, self.L, B, T, self.cfg.get("attn", "causal"),
                       int(self.cfg.get("window", 128)))
        out = torch.zeros(B, T, dtype=torch.long)
        P = self.prompt.shape[1]
        tok = self.prompt[:, 0]
        for pos in range(T):
            out[:, pos] = tok
            if pos == T - 1:
                break
            logits = m.step(tok, pos)
            nxt = torch.argmax(logits, dim=-1)
            tok = self.prompt[:, pos + 1] if pos + 1 < P else nxt
            self.acct.tick(pos)
        self.tokens = out
        self.acct.free_all()


def make_torch_llama(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> TorchLlamaDecoder:
    """`torch` system of E4."""
    return TorchLlamaDecoder(cfg, acct)
