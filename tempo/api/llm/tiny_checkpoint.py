"""Write a small random Llama checkpoint in both layouts, offline, for tests and the demo:
Hugging Face's (`config.json`, `model.safetensors`, `tokenizer.json`) in the directory and
Meta's (`params.json`, `consolidated.00.pth`, a tiktoken `tokenizer.model`) under `original/`.

The tokenizer is a byte-level BPE trained with `tokenizers` on `tiny_corpus.CORPUS`, followed
by Llama-3's 256 special tokens, so the tiktoken file and `tokenizer.json` agree on ids.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tempo.api.llm.checkpoint import hf_to_meta
from tempo.api.llm.models.llama import LlamaArgs
from tempo.api.llm.tiny_corpus import CORPUS
from tempo.api.llm.tokenizer.llama_tiktoken_tokenizer import SPECIAL_TOKENS
from tempo.api.nn.rope import RopeScalingParams

# llama3 scaling with a short original context, so positions 0..40 cross every regime.
TINY_SCALING = RopeScalingParams(factor=8.0, original_max_position_embeddings=16)


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-to-unicode map, inverted (what ByteLevel BPE vocab strings encode)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def train_tokenizer(out_dir: Path, n_bpe: int = 512) -> Any:
    """A byte-level BPE of `n_bpe` tokens + the special tokens; writes tokenizer.json,
    tokenizer_config.json and (under original/) the tiktoken tokenizer.model."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=n_bpe, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS.splitlines(), trainer)
    n = tok.get_vocab_size()
    tok.add_special_tokens(SPECIAL_TOKENS)
    tok.save(str(out_dir / "tokenizer.json"))
    (out_dir / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}))
    dec = _byte_decoder()
    vocab = tok.get_vocab(with_added_tokens=False)
    lines = [f"{base64.b64encode(bytes(dec[c] for c in s)).decode()} {i}"
             for s, i in sorted(vocab.items(), key=lambda kv: kv[1]) if i < n]
    (out_dir / "original").mkdir(exist_ok=True)
    (out_dir / "original" / "tokenizer.model").write_text("\n".join(lines) + "\n")
    return tok


def write_tiny_checkpoint(out_dir: str, n_layers: int = 2, dim: int = 64, n_heads: int = 4,
                          n_kv_heads: int = 2, intermediate_size: int = 192,
                          rope_theta: float = 500000.0,
                          rope_scaling: RopeScalingParams | None = TINY_SCALING,
                          tie: bool = True, seed: int = 0, init_std: float = 0.1) -> str:
    """Create `out_dir` with both layouts of one random model; returns `out_dir`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer(d)
    vocab = tok.get_vocab_size(with_added_tokens=True)
    rope: dict[str, Any] = {"rope_type": "default", "rope_theta": rope_theta}
    if rope_scaling is not None:
        rope = {"rope_type": "llama3", "rope_theta": rope_theta, "factor": rope_scaling.factor,
                "high_freq_factor": rope_scaling.high_freq_factor,
                "low_freq_factor": rope_scaling.low_freq_factor,
                "original_max_position_embeddings":
                    rope_scaling.original_max_position_embeddings}
    eos = vocab - len(SPECIAL_TOKENS) + 1
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=dim, intermediate_size=intermediate_size,
                      num_hidden_layers=n_layers, num_attention_heads=n_heads,
                      num_key_value_heads=n_kv_heads, rms_norm_eps=1e-5,
                      max_position_embeddings=4096, tie_word_embeddings=tie,
                      attention_bias=False, mlp_bias=False, initializer_range=init_std,
                      rope_parameters=rope, bos_token_id=eos - 1, eos_token_id=eos)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():  # non-trivial norm weights, so a wrong name mapping shows
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(str(d), safe_serialization=True)
    from tempo.api.llm.checkpoint import read_args

    args: LlamaArgs = read_args(str(d), vocab)
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if tie:
        sd.pop("lm_head.weight", None)
    meta = hf_to_meta(sd, args)
    params: dict[str, Any] = {"dim": dim, "n_layers": n_layers, "n_heads": n_heads,
                              "n_kv_heads": n_kv_heads, "vocab_size": vocab,
                              "multiple_of": args.multiple_of,
                              "ffn_dim_multiplier": args.ffn_dim_multiplier,
                              "norm_eps": 1e-5, "rope_theta": rope_theta,
                              "use_scaled_rope": rope_scaling is not None}
    if rope_scaling is not None:
        params.update(rope_scaling_factor=rope_scaling.factor,
                      high_freq_factor=rope_scaling.high_freq_factor,
                      low_freq_factor=rope_scaling.low_freq_factor,
                      original_max_position_embeddings=(
                          rope_scaling.original_max_position_embeddings))
    (d / "original" / "params.json").write_text(json.dumps(params, indent=1))
    torch.save(meta, str(d / "original" / "consolidated.00.pth"))
    return str(d)
