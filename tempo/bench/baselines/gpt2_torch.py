"""Torch GPT-2-core decoders of §2.2: Optimized (preallocated cache + slicing) and Naive.

Naive carries the two "developer mistakes" on purpose: a transposed cache/output layout (strided
writes, transposed reads) and attention scores and outputs each computed twice.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from tempo.bench.baselines.gpt2_core import RMS_EPS, Gpt2CoreConfig, charge_decode, init_weights
from tempo.bench.memory import DeviceMemoryAccountant


def _rms(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS)


class TorchGpt2Decoder:
    """Eager decoder under no_grad; the model and caches are built inside `run()` (timed)."""

    def __init__(self, cfg: dict[str, Any], acct: DeviceMemoryAccountant, naive: bool = False,
                 weights: dict[str, np.ndarray] | None = None, x0: np.ndarray | None = None):
        self.c = Gpt2CoreConfig.from_dict(cfg)
        self.seq_len = self.c.seq_len
        self.acct, self.naive = acct, naive
        self.weights, self.x0 = weights, x0
        self.out: torch.Tensor | None = None

    def compile(self) -> None:
        """Eager torch: nothing to compile."""

    def _build(self) -> dict[str, torch.Tensor]:
        if self.weights is not None:
            return {k: torch.from_numpy(v.copy()) for k, v in self.weights.items()}
        g = torch.Generator().manual_seed(self.c.seed)
        L, d, f = self.c.n_layers, self.c.d_model, self.c.d_ff
        w = {k: torch.randn(L, d, d, generator=g) for k in ("wq", "wk", "wv")}
        w["wo"] = torch.randn(L, d, d, generator=g) * 0.02
        w["w1"] = torch.randn(L, d, f, generator=g) * 0.02
        w["w2"] = torch.randn(L, f, d, generator=g) * 0.02
        w.update({"bo": torch.zeros(L, d), "b1": torch.zeros(L, f), "b2": torch.zeros(L, d)})
        return w

    @torch.no_grad()
    def run(self) -> None:
        c, acct = self.c, self.acct
        charge_decode(acct, c)
        w = self._build()
        B, H, dh, T, d = c.batch, c.n_heads, c.head_dim, c.seq_len, c.d_model
        bo = w.get("bo", torch.zeros(c.n_layers, d))
        b1 = w.get("b1", torch.zeros(c.n_layers, c.d_ff))
        b2 = w.get("b2", torch.zeros(c.n_layers, d))
        shape = (B, H, dh, T) if self.naive else (B, H, T, dh)
        kc = [torch.zeros(shape) for _ in range(c.n_layers)]
        vc = [torch.zeros(shape) for _ in range(c.n_layers)]
        out = torch.empty((B, d, T) if self.naive else (B, T, d))
        x = torch.from_numpy(self.x0.copy()) if self.x0 is not None else torch.randn(B, d)
        scale = 1.0 / math.sqrt(d)
        for t in range(T):
            if self.naive:
                out[:, :, t] = x
            else:
                out[:, t] = x
            if t == T - 1:
                break
            lo = c.kv_lo(t)
            for n in range(c.n_layers):
                q = (x @ w["wq"][n]).view(B, H, 1, dh)
                k = (x @ w["wk"][n]).view(B, H, dh)
                v = (x @ w["wv"][n]).view(B, H, dh)
                if self.naive:
                    kc[n][:, :, :, t] = k
                    vc[n][:, :, :, t] = v
                    K = kc[n][:, :, :, lo:t + 1].transpose(-1, -2)
                    V = vc[n][:, :, :, lo:t + 1].transpose(-1, -2)
                    s = torch.matmul(q, K.transpose(-1, -2)) * scale
                    s = torch.matmul(q, K.transpose(-1, -2)) * scale  # mistake: computed twice
                    p = torch.softmax(s, dim=-1)
                    o = torch.matmul(p, V)
                    o = torch.matmul(p, V)  # mistake: computed twice
                else:
                    kc[n][:, :, t] = k
                    vc[n][:, :, t] = v
                    s = torch.matmul(q, kc[n][:, :, lo:t + 1].transpose(-1, -2)) * scale
                    p = torch.softmax(s, dim=-1)
                    o = torch.matmul(p, vc[n][:, :, lo:t + 1])
                a = o.reshape(B, d) @ w["wo"][n] + bo[n]
                h = _rms(a + x)
                x = _rms(torch.nn.functional.silu(h @ w["w1"][n] + b1[n]) @ w["w2"][n] + b2[n] + h)
            acct.tick(t)
        self.out = out.transpose(1, 2) if self.naive else out
        acct.free_all()


def make_optimized(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> TorchGpt2Decoder:
    """`torch` system of E1/E3."""
    return TorchGpt2Decoder(cfg, acct, naive=False)


def make_naive(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> TorchGpt2Decoder:
    """`torchnaive` system of E1/E3."""
    return TorchGpt2Decoder(cfg, acct, naive=True)


__all__ = ["TorchGpt2Decoder", "make_naive", "make_optimized", "init_weights"]
