"""Reading Llama checkpoints from local directories, in either layout:

* Meta: `params.json` + `consolidated.00.pth` (also under `original/`), Meta's key names, q/k
  rows ordered for RoPE on interleaved pairs — the layout `Llama` uses directly;
* Hugging Face: `config.json` + `*.safetensors` (one file or shards with an index), HF key
  names, q/k rows permuted for `rotate_half` RoPE — renamed and un-permuted on load.

Both give the same state dict, so the same `Llama` and the same logits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tempo.api.llm.models.llama import LlamaArgs, ffn_hidden_dim
from tempo.api.nn.rope import RopeScalingParams
from tempo.core.dtype import DataTypeLike, dtypes
from tempo.core.errors import TempoError, UnsupportedError, user_site


class CheckpointError(TempoError, ValueError):
    """A checkpoint directory that is missing files or holds what we cannot read."""


def find_layout(checkpoint_dir: str) -> tuple[str, Path]:
    """("meta", dir with params.json) or ("hf", dir with config.json); Meta wins when both
    are present (Meta's release ships HF files beside `original/`)."""
    root = Path(checkpoint_dir)
    if not root.is_dir():
        raise CheckpointError(f"checkpoint directory {checkpoint_dir!r} does not exist",
                              site=user_site())
    for d in (root, root / "original"):
        if (d / "params.json").exists() and list(d.glob("consolidated.*.pth")):
            return "meta", d
    if (root / "config.json").exists() and list(root.glob("*.safetensors")):
        return "hf", root
    raise CheckpointError(
        f"{checkpoint_dir!r} holds neither Meta's layout (params.json + consolidated.00.pth, "
        "optionally under original/) nor Hugging Face's (config.json + *.safetensors)",
        site=user_site())


def read_args(checkpoint_dir: str, n_words: int, enable_rope_scaling: bool = True,
              force_rope_base: float | None = None) -> LlamaArgs:
    """`LlamaArgs` of either layout; `vocab_size` falls back to `n_words` when unset."""
    layout, d = find_layout(checkpoint_dir)
    if layout == "meta":
        args = _meta_args(json.loads((d / "params.json").read_text()))
    else:
        args = _hf_args(json.loads((d / "config.json").read_text()))
    if args.vocab_size <= 0:
        args.vocab_size = int(n_words)
    if not enable_rope_scaling:
        args.use_scaled_rope = False
    if force_rope_base is not None:
        args.rope_theta = float(force_rope_base)
    return args


def _meta_args(p: dict[str, Any]) -> LlamaArgs:
    known = set(LlamaArgs.__dataclass_fields__) - {"rope_scaling_params"}
    args = LlamaArgs(**{k: v for k, v in p.items() if k in known})
    if args.use_scaled_rope:
        d = RopeScalingParams()
        args.rope_scaling_params = RopeScalingParams(
            factor=float(p.get("rope_scaling_factor", d.factor)),
            high_freq_factor=float(p.get("high_freq_factor", d.high_freq_factor)),
            low_freq_factor=float(p.get("low_freq_factor", d.low_freq_factor)),
            original_max_position_embeddings=int(p.get("original_max_position_embeddings",
                                                       d.original_max_position_embeddings)))
    return args


def _hf_args(c: dict[str, Any]) -> LlamaArgs:
    if c.get("model_type", "llama") != "llama":
        raise UnsupportedError(f"config.json model_type {c.get('model_type')!r}: only 'llama'"
                               " checkpoints load into Llama", site=user_site())
    dim, heads = int(c["hidden_size"]), int(c["num_attention_heads"])
    if int(c.get("head_dim") or dim // heads) != dim // heads:
        raise UnsupportedError(f"config.json head_dim {c['head_dim']} != hidden_size / heads",
                               site=user_site())
    if c.get("attention_bias") or c.get("mlp_bias"):
        raise UnsupportedError("Llama checkpoints with attention or MLP biases",
                               site=user_site())
    rope = dict(c.get("rope_parameters") or {})
    scaling = c.get("rope_scaling") or (rope if rope.get("rope_type", "default") != "default"
                                        else None)
    theta = float(c.get("rope_theta") or rope.get("rope_theta") or 10000.0)
    inter = int(c["intermediate_size"])
    base = int(2 * (4 * dim) / 3)
    mult = None if base <= inter else inter / base
    args = LlamaArgs(dim=dim, multiple_of=inter, n_heads=heads,
                     n_kv_heads=int(c.get("num_key_value_heads") or heads),
                     n_layers=int(c["num_hidden_layers"]), norm_eps=float(c["rms_norm_eps"]),
                     ffn_dim_multiplier=mult, rope_theta=theta, vocab_size=int(c["vocab_size"]),
                     tie_embeddings_and_output=bool(c.get("tie_word_embeddings", False)))
    if ffn_hidden_dim(4 * dim, args.multiple_of, mult) != inter:
        raise CheckpointError(f"cannot express intermediate_size {inter} as Meta's FeedForward "
                              "width", site=user_site())
    if scaling:
        kind = scaling.get("rope_type", scaling.get("type"))
        if kind != "llama3":
            raise UnsupportedError(f"rope scaling {kind!r}: only 'llama3' is supported",
                                   site=user_site())
        args.use_scaled_rope = True
        args.rope_scaling_params = RopeScalingParams(
            factor=float(scaling["factor"]), high_freq_factor=float(scaling["high_freq_factor"]),
            low_freq_factor=float(scaling["low_freq_factor"]),
            original_max_position_embeddings=int(scaling["original_max_position_embeddings"]))
    return args


def torch_dtype(dtype: DataTypeLike) -> Any:
    import torch

    dt = dtypes.from_(dtype) if dtype is not None else dtypes.default_float
    return getattr(torch, dt.name)


def load_meta_state_dict(checkpoint_dir: str, args: LlamaArgs,
                         dtype: DataTypeLike = None) -> dict[str, Any]:
    """The weights under Meta's names as torch tensors of `dtype` (HF converted)."""
    layout, d = find_layout(checkpoint_dir)
    state = _load_meta(d) if layout == "meta" else hf_to_meta(_load_hf(d), args)
    dt = torch_dtype(dtype)
    return {k: v.to(dt).contiguous() for k, v in state.items()}


def _load_meta(d: Path) -> dict[str, Any]:
    import torch

    shards = sorted(d.glob("consolidated.*.pth"))
    if len(shards) > 1:
        raise UnsupportedError(f"{d} holds {len(shards)} model-parallel shards; merge them "
                               "into one consolidated.00.pth first", site=user_site())
    sd = torch.load(str(shards[0]), map_location="cpu", weights_only=True)
    return {k: v for k, v in sd.items() if not k.endswith("rope.freqs")}


def _load_hf(d: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    index = d / "model.safetensors.index.json"
    if index.exists():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    else:
        files = sorted(p.name for p in d.glob("*.safetensors"))
    out: dict[str, Any] = {}
    for f in files:
        if not (d / f).exists():
            raise CheckpointError(f"shard {f} listed in {index.name} is missing from {d}",
                                  site=user_site())
        out.update(load_file(str(d / f)))
    return out


_HF_LAYER = {
    "self_attn.q_proj": "attention.wq", "self_attn.k_proj": "attention.wk",
    "self_attn.v_proj": "attention.wv", "self_attn.o_proj": "attention.wo",
    "mlp.gate_proj": "feed_forward.w1", "mlp.down_proj": "feed_forward.w2",
    "mlp.up_proj": "feed_forward.w3", "input_layernorm": "attention_norm",
    "post_attention_layernorm": "ffn_norm",
}
_HF_TOP = {"model.embed_tokens.weight": "tok_embeddings.weight",
           "model.norm.weight": "norm.weight", "lm_head.weight": "output.weight"}


def rope_unpermute(w: Any, n_heads: int) -> Any:
    """HF's q/k rows (halves of each head) back to Meta's (interleaved pairs)."""
    rows, cols = w.shape
    return w.view(n_heads, 2, rows // n_heads // 2, cols).transpose(1, 2).reshape(rows, cols)


def rope_permute(w: Any, n_heads: int) -> Any:
    """Meta's q/k rows to HF's (the inverse of `rope_unpermute`)."""
    rows, cols = w.shape
    return w.view(n_heads, rows // n_heads // 2, 2, cols).transpose(1, 2).reshape(rows, cols)


def hf_to_meta(sd: dict[str, Any], args: LlamaArgs) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in sd.items():
        if k in _HF_TOP:
            out[_HF_TOP[k]] = v
            continue
        parts = k.split(".")
        if len(parts) < 5 or parts[:2] != ["model", "layers"]:
            if k.endswith("rotary_emb.inv_freq"):
                continue
            raise CheckpointError(f"unexpected tensor {k!r} in a Llama safetensors checkpoint",
                                  site=user_site())
        n, mod, leaf = parts[2], ".".join(parts[3:-1]), parts[-1]
        if mod not in _HF_LAYER:
            raise CheckpointError(f"unexpected tensor {k!r} in a Llama safetensors checkpoint",
                                  site=user_site())
        if mod == "self_attn.q_proj":
            v = rope_unpermute(v, args.n_heads)
        elif mod == "self_attn.k_proj":
            v = rope_unpermute(v, args.kv_heads)
        out[f"layers.{n}.{_HF_LAYER[mod]}.{leaf}"] = v
    return out


def meta_to_hf(sd: dict[str, Any], args: LlamaArgs) -> dict[str, Any]:
    """Meta names and layout to HF's (used to write test and demo checkpoints)."""
    top = {v: k for k, v in _HF_TOP.items()}
    layer = {v: k for k, v in _HF_LAYER.items()}
    out: dict[str, Any] = {}
    for k, v in sd.items():
        if k in top:
            out[top[k]] = v
            continue
        _, n, *mid, leaf = k.split(".")
        mod = ".".join(mid)
        if mod == "attention.wq":
            v = rope_permute(v, args.n_heads)
        elif mod == "attention.wk":
            v = rope_permute(v, args.kv_heads)
        out[f"model.layers.{n}.{layer[mod]}.{leaf}"] = v
    return out
