"""The Tempo GPT-2-core decoder of BENCHMARKS.md §2.2 (E1/E3), written against the public API.

Symbolic dims (t = step, n = layer); the batch is a spatial dim. Weights have domain (n,).
Recurrences: `s[0] = x0; s[t+1] = x_out[t, N-1]`, `x_in[t, 0] = s[t]; x_in[t, n] = x_out[t, n-1]`.
Attention reads the key/value history `k[lo:t+1, n]` (lo = 0 causal, max(0, t-W+1) window),
which the storage pass keeps in a block store so each read is a view.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from tempo.bench.baselines.gpt2_core import RMS_EPS, Gpt2CoreConfig, charge_decode, init_weights
from tempo.bench.memory import DeviceMemoryAccountant


class TempoGpt2Decoder:
    """`compile()` records and compiles the program (timed as comp_time); `run()` decodes."""

    def __init__(self, cfg: dict[str, Any], acct: DeviceMemoryAccountant,
                 weights: dict[str, np.ndarray] | None = None, x0: np.ndarray | None = None,
                 backend: str = "torch") -> None:
        self.c = Gpt2CoreConfig.from_dict(cfg)
        self.seq_len = self.c.seq_len
        self.acct = acct
        self.weights = weights if weights is not None else init_weights(self.c, "torch")
        rng = np.random.default_rng(self.c.seed + 1)
        self.x0 = x0 if x0 is not None else rng.standard_normal(
            (self.c.batch, self.c.d_model)).astype(np.float32)
        self.backend = backend
        self.out: torch.Tensor | None = None
        self._rows: list[Any] = []
        self.exe: Any = None

    def compile(self) -> None:
        from tempo.api import RecurrentTensor as RT
        from tempo.api import TempoContext
        from tempo.core import index_expr as ie
        from tempo.core.configs import ExecutionConfig
        from tempo.core.dtype import dtypes

        c = self.c
        B, d, H, dh = c.batch, c.d_model, c.n_heads, c.head_dim
        cfg = ExecutionConfig(dev="cpu", backend=self.backend, path="results/.tempo_runs/")
        ctx = TempoContext(cfg, num_dims=2)
        (t, T), (n, N) = ctx.variables_and_bounds
        w = {k: torch.from_numpy(v) for k, v in self.weights.items()}
        rows = self._rows
        with ctx:
            def weight(name: str, shape: tuple[int, ...]) -> Any:
                return RT.source_with_ts_udf(lambda ts: w[name][ts[n]], shape, dtypes.float32,
                                             domain=(n,))

            wq, wk, wv, wo = (weight(k, (d, d)) for k in ("wq", "wk", "wv", "wo"))
            w1, w2 = weight("w1", (d, c.d_ff)), weight("w2", (c.d_ff, d))
            s = RT.placeholder((B, d), dtypes.float32, domain=(t,))
            xi = RT.placeholder((B, d), dtypes.float32, domain=(t, n))
            xi[t, 0] = s
            q = (xi @ wq).reshape((B, H, 1, dh))
            k = (xi @ wk).reshape((B, H, dh))
            v = (xi @ wv).reshape((B, H, dh))
            lo = 0 if c.attn == "causal" else ie.max(0, t - c.window + 1)
            keys = k[lo : t + 1, n].permute((1, 2, 3, 0))       # (B, H, dh, L)
            vals = v[lo : t + 1, n].permute((1, 2, 0, 3))       # (B, H, L, dh)
            p = ((q @ keys) * (1.0 / math.sqrt(d))).softmax(-1)  # (B, H, L)
            o = (p.unsqueeze(-2) @ vals).reshape((B, d))
            h = _rms(o @ wo + xi)
            z = h @ w1
            xo = _rms((z * z.sigmoid()) @ w2 + h)
            xi[t, n + 1] = xo
            s[0] = RT.const(self.x0)
            s[t + 1] = xo[t, N - 1]
            s.sink_udf(lambda x: rows.append(x))
        self.exe = ctx.compile({T: c.seq_len, N: c.n_layers})

    def run(self) -> None:
        charge_decode(self.acct, self.c)
        self._rows.clear()
        self.exe.execute()
        self.out = torch.stack([torch.as_tensor(np.asarray(r)) for r in self._rows], dim=1)
        self.exe.reset()
        self.acct.free_all()


def _rms(x: Any) -> Any:
    return x / ((x * x).mean(-1, keepdim=True) + RMS_EPS).sqrt()


def make_tempo(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> TempoGpt2Decoder:
    """`tempo` system of E1/E3 (torch backend)."""
    return TempoGpt2Decoder(cfg, acct)
