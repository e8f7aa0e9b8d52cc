"""The tiny Llama of §7.5 and its random weights, shared by the eager and the HF baselines.

Weights come from Hugging Face's `LlamaForCausalLM` random init and are saved once as a local
safetensors file (`<results>/llama32_decode/weights/`), which every system (and later Tempo) loads.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypedDict

import numpy as np


class TinyLlama(TypedDict):
    """`LlamaConfig` keywords of the tiny model, typed (ints stay ints for shapes)."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    rope_theta: float
    rms_norm_eps: float
    vocab_size: int
    tie_word_embeddings: bool


TINY_LLAMA = TinyLlama(hidden_size=256, num_hidden_layers=4, num_attention_heads=8,
                       num_key_value_heads=2, intermediate_size=768, rope_theta=500000.0,
                       rms_norm_eps=1e-5, vocab_size=2048, tie_word_embeddings=True)


def hf_config(n_layers: int = 4, max_pos: int = 4096) -> Any:
    """`LlamaConfig` of the tiny model (no rope scaling, no biases, head_dim 32)."""
    from transformers import LlamaConfig

    # Any: transformers 5 takes rope_theta through **kwargs, absent from its typed signature
    kw: dict[str, Any] = {**TINY_LLAMA, "num_hidden_layers": n_layers}
    return LlamaConfig(**kw, max_position_embeddings=max_pos, attention_bias=False,
                       mlp_bias=False, bos_token_id=1, eos_token_id=None, pad_token_id=0)


def ensure_weights(weights_dir: str, n_layers: int = 4, max_pos: int = 4096,
                   seed: int = 0) -> str:
    """Create (once) and return the directory holding `config.json` + `model.safetensors`."""
    d = Path(weights_dir) / f"tiny_llama_l{n_layers}"
    if (d / "model.safetensors").exists():
        return str(d)
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(hf_config(n_layers, max_pos))
    tmp = d.with_name(d.name + f".tmp{os.getpid()}")
    model.save_pretrained(str(tmp), safe_serialization=True)
    tmp.rename(d)
    return str(d)


def weights_dir(cfg: dict[str, Any]) -> str:
    """Shared weights dir: `weights_dir`, else `<results_root>/llama32_decode/weights`."""
    if cfg.get("weights_dir"):
        return str(cfg["weights_dir"])
    return os.path.join(cfg.get("results_root", "results"), "llama32_decode", "weights")


def load_state(weights_dir: str) -> dict[str, Any]:
    """The safetensors state dict as torch tensors (HF key names)."""
    from safetensors.torch import load_file

    return load_file(str(Path(weights_dir) / "model.safetensors"))


def prompts(batch: int, vocab: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic prompts of §7.1: random ids, lengths 4-8, left-padded with pad id 0.
    Returns (ids (B, Pmax), attention mask (B, Pmax))."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(4, 9, size=batch)
    pmax = int(lens.max())
    ids = np.zeros((batch, pmax), np.int64)
    mask = np.zeros((batch, pmax), np.int64)
    for b, n in enumerate(lens):
        ids[b, pmax - n:] = rng.integers(3, vocab, size=n)
        mask[b, pmax - n:] = 1
    return ids, mask


def kv_bytes(n_layers: int, batch: int, seq_len: int) -> int:
    """K+V cache bytes (fp32) of the tiny model at full length."""
    kv_heads, dh = TINY_LLAMA["num_key_value_heads"], 32
    return n_layers * 2 * batch * seq_len * kv_heads * dh * 4


def weight_bytes(n_layers: int) -> int:
    """Parameter bytes (fp32, tied embedding counted once)."""
    d, f, v = 256, 768, 2048
    per_layer = d * d * 2 + d * 64 * 2 + 3 * d * f + 2 * d
    return 4 * (v * d + n_layers * per_layer + d)
