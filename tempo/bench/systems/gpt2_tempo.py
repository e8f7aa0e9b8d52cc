"""The Tempo GPT-2-core decoder of BENCHMARKS.md §2.2 (E1/E3): the library model
`tempo.api.llm.models.gpt2_core.Gpt2Core` (layer as a dimension) with a sink on the stream.

Memory is Tempo's own: the program runs with the bench's device cap (less the output
buffer the harness charges to every system), and after a run the per-step timeline of live
bytes its stores report (K/V in block stores of U points, or window stores) is replayed
into the bench accountant."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tempo.bench.baselines.gpt2_core import Gpt2CoreConfig, init_weights
from tempo.bench.memory import DeviceMemoryAccountant, nbytes_of

NO_CAP = 1 << 50  # a cap nothing reaches: turns Tempo's accounting on without limiting it


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
        self.block_size = int(cfg.get("block", 256))  # U of the block stores
        self.out: torch.Tensor | None = None
        self._rows: list[Any] = []
        self.exe: Any = None

    def compile(self) -> None:
        from tempo.api import RecurrentTensor as RT
        from tempo.api import TempoContext
        from tempo.api.llm.models.gpt2_core import Gpt2Core
        from tempo.bench.results import results_path
        from tempo.core.configs import ExecutionConfig

        c = self.c
        cap = self.acct.cap_bytes
        cfg = ExecutionConfig(
            dev="cpu", backend=self.backend, path=f"{results_path('.tempo_runs')}/",
            inc_statify_block_size=self.block_size,
            device_memory_cap_bytes=NO_CAP if cap is None else max(cap - self._out_bytes(), 0))
        ctx = TempoContext(cfg, num_dims=1)
        ((t, T),) = ctx.variables_and_bounds
        rows = self._rows
        with ctx:
            core = Gpt2Core(c.n_layers, c.n_heads, c.d_model, c.d_ff, t, self.weights,
                            window=None if c.attn == "causal" else c.window)
            s = core.decode(RT.const(self.x0))
            s.sink_udf(lambda x: rows.append(x))
        self.exe = ctx.compile({T: c.seq_len})

    def _out_bytes(self) -> int:
        return nbytes_of(self.c.batch, self.c.seq_len, self.c.d_model)

    def run(self) -> None:
        self.acct.alloc("output", self._out_bytes())
        self._rows.clear()
        self.exe.execute()
        for step, (live, _host) in enumerate(self.exe.memory_timeline()):
            self.acct.alloc("tempo_stores", live)
            self.acct.tick(step)
        self.acct.alloc("tempo_stores", self.exe.memory_stats()["peak_bytes"] or 0)
        rows = self._rows
        if not (rows and isinstance(rows[0], torch.Tensor)):  # (jax arrays: via numpy)
            rows = [torch.as_tensor(np.asarray(r)) for r in rows]
        self.out = torch.stack(rows, dim=1)  # torch's rows: one call, not two per row
        self.exe.reset()
        self.acct.free_all()


def make_tempo(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> TempoGpt2Decoder:
    """`tempo` system of E1/E3 (torch backend)."""
    return TempoGpt2Decoder(cfg, acct)


def make_tempo_numpy(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> TempoGpt2Decoder:
    """`temponumpy` system of E2: the same program on numpy, whose tiled attention still
    pays a dispatch per block (torch's joined block stores read a causal history as one
    view, so its TPT is nearly flat in U: results/gpt2/u_curve.md)."""
    return TempoGpt2Decoder(cfg, acct, backend="numpy")


def make_tempo_jax(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> TempoGpt2Decoder:
    """`tempojax` system of E1: the same program on the jax backend (attention tiled into
    static blocks, so its first run compiles each kernel once, not once per step)."""
    return TempoGpt2Decoder(cfg, acct, backend="jax")
