"""The Tempo tiny-Llama decoder of E4 (§7.5) and the compile-time-vs-depth probe of E4c.

Decode: `tempo.api.llm` loads the same safetensors weights as the eager Torch and HF
baselines and runs the Torch-like protocol (greedy, no prefill, prompt positions forced to
the prompt token, left pads attended with absolute positions), so its tokens equal the eager
Torch decoder's. Compile probe: the model built from params only (random per-layer weights)
and compiled for seq 1024; the layer is a dimension, so the program has one layer's ops.
"""

from __future__ import annotations

import time
from typing import Any

from tempo.bench.baselines.llama_core import (
    TINY_LLAMA,
    ensure_weights,
    kv_bytes,
    prompts,
    weight_bytes,
    weights_dir,
)
from tempo.bench.clock import cpu_seconds
from tempo.bench.memory import DeviceMemoryAccountant


class TempoLlamaDecoder:
    """`compile()` records and compiles the whole decode; `run()` executes it."""

    def __init__(self, cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> None:
        self.cfg, self.acct = cfg, acct
        self.seq_len = int(cfg["seq_len"])
        self.L = int(cfg.get("n_layers", 4))
        self.wdir = ensure_weights(weights_dir(cfg), self.L, max(4096, self.seq_len))
        ids, _ = prompts(int(cfg["batch"]), TINY_LLAMA["vocab_size"], int(cfg.get("seed", 0)))
        self.prompt = ids
        self.gen: Any = None
        self.tokens: Any = None

    def compile(self) -> None:
        from tempo.api.llm.generate import Generation
        from tempo.bench.results import results_path
        from tempo.core.configs import ExecutionConfig

        window = int(self.cfg.get("window", 128)) if self.cfg.get("attn") == "window" else None
        cfg = ExecutionConfig(dev="cpu", backend="torch", path=f"{results_path('.tempo_runs')}/")
        self.gen = Generation(self.wdir, self.prompt, self.seq_len - self.prompt.shape[1],
                              exec_cfg=cfg, window=window)

    def run(self) -> None:
        B = int(self.cfg["batch"])
        self.acct.alloc("weights", weight_bytes(self.L))
        self.acct.alloc("kv_cache", kv_bytes(self.L, B, self.seq_len))
        self.gen.execute()
        self.tokens = self.gen.result()
        self.acct.free_all()


def make_tempo_llama(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> TempoLlamaDecoder:
    """`tempo` system of E4."""
    return TempoLlamaDecoder(cfg, acct)


def compile_llama(cfg: dict[str, Any]) -> dict[str, Any]:
    """E4c: wall and CPU seconds of recording + `compile()` for the tiny Llama at
    `n_layers` layers."""
    import numpy as np

    from tempo.api import RecurrentTensor as RT
    from tempo.api import TempoContext
    from tempo.api.llm.models.llama import Llama, LlamaArgs
    from tempo.core.configs import ExecutionConfig
    from tempo.core.dtype import dtypes

    n_layers, B, T = int(cfg["n_layers"]), int(cfg.get("batch", 4)), int(cfg["seq_len"])
    c = TINY_LLAMA
    args = LlamaArgs(dim=c["hidden_size"], multiple_of=c["intermediate_size"],
                     n_heads=c["num_attention_heads"], n_kv_heads=c["num_key_value_heads"],
                     n_layers=n_layers, norm_eps=c["rms_norm_eps"], rope_theta=c["rope_theta"],
                     vocab_size=c["vocab_size"])
    w0, c0 = time.perf_counter(), cpu_seconds()
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="torch"), num_dims=1)
    ((t, Tb),) = ctx.variables_and_bounds
    with ctx:
        model = Llama(args, t)
        tok = RT.placeholder((B,), dtypes.default_int, domain=(t,))
        tok[0] = RT.const(np.ones(B, np.int32), dtype=dtypes.default_int)
        tok[True] = Llama.sample(model.forward(tok), greedy=True).cast(dtypes.default_int)[t - 1]
        tok.sink_udf(lambda x: None)
    record_s = time.perf_counter() - w0
    exe = ctx.compile({Tb: T})
    prof = exe.compile_profile()
    return {"comp_time": time.perf_counter() - w0, "comp_cpu_time": cpu_seconds() - c0,
            "record_time": record_s, "n_ops": len(exe.sdg.ops),
            **{f"profile_{k}_ms": v for k, v in prof.items()}}
