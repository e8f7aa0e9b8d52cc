"""The real Hugging Face `LlamaForCausalLM` decoding greedily with `generate()` (E4).

Two systems: its default dynamic cache and its static cache. HF prefills the prompt in one
forward (unlike the no-prefill baselines) and masks the left padding; generation length is
forced to exactly seq_len positions. Llama has no sliding-window attention: window is MISSING.
"""

from __future__ import annotations

from typing import Any

import torch

from tempo.bench.baselines.llama_core import (
    TINY_LLAMA,
    ensure_weights,
    kv_bytes,
    prompts,
    weight_bytes,
    weights_dir,
)
from tempo.bench.memory import DeviceMemoryAccountant


def window_unsupported(cfg: dict[str, Any]) -> str | None:
    """Registry hook: LlamaForCausalLM cannot do window attention."""
    if cfg.get("attn") == "window":
        return "transformers LlamaForCausalLM has no sliding-window attention"
    return None


class HfLlamaDecoder:
    """`run()` = `model.generate(...)` to seq_len total positions, greedy."""

    def __init__(self, cfg: dict[str, Any], acct: DeviceMemoryAccountant, static: bool) -> None:
        from transformers import LlamaForCausalLM

        self.cfg, self.acct, self.static = cfg, acct, static
        self.seq_len = int(cfg["seq_len"])
        self.L = int(cfg.get("n_layers", 4))
        wdir = ensure_weights(weights_dir(cfg), self.L, max(4096, self.seq_len))
        self.model = LlamaForCausalLM.from_pretrained(wdir, torch_dtype=torch.float32).eval()
        ids, mask = prompts(int(cfg["batch"]), TINY_LLAMA["vocab_size"], int(cfg.get("seed", 0)))
        self.ids, self.mask = torch.from_numpy(ids), torch.from_numpy(mask)
        self.tokens: torch.Tensor | None = None

    def compile(self) -> None:
        """Nothing to compile (no torch.compile on CPU)."""

    @torch.no_grad()
    def run(self) -> None:
        B = int(self.cfg["batch"])
        self.acct.alloc("weights", weight_bytes(self.L))
        self.acct.alloc("kv_cache", kv_bytes(self.L, B, self.seq_len))
        n_new = self.seq_len - self.ids.shape[1]
        kw: dict[str, Any] = dict(max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False,
                                  pad_token_id=0, eos_token_id=None)
        if self.static:
            kw["cache_implementation"] = "static"
        self.tokens = self.model.generate(self.ids, attention_mask=self.mask, **kw)
        self.acct.free_all()


def make_hf_dynamic(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> HfLlamaDecoder:
    """`hf` system of E4 (default DynamicCache)."""
    return HfLlamaDecoder(cfg, acct, static=False)


def make_hf_static(cfg: dict[str, Any], acct: DeviceMemoryAccountant) -> HfLlamaDecoder:
    """`hfstatic` system of E4 (StaticCache)."""
    return HfLlamaDecoder(cfg, acct, static=True)
