"""Hugging Face attention modules routed through :func:`softmax_dropout_matmul`.

HF computes softmax -> dropout -> @V inline in ``eager_attention_forward``, looked up through
``ALL_ATTENTION_FUNCTIONS`` by ``module.config._attn_implementation``. We register one more
implementation and point only the converted module at it (through a private copy of its config),
so the model-level mask construction still sees ``"eager"`` and builds the additive 4-D mask.
transformers is imported lazily: this package must work without it.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import torch
from torch import nn

from tempo.memsave.attention import softmax_dropout_matmul

IMPLEMENTATION = "tempo_memsave"

#: ``transformers.models.<name>.modeling_<name>`` modules whose eager attention is exactly
#: scores = q k^T * scaling + mask; softmax; dropout; @ v (checked against transformers 5.x).
SUPPORTED_MODELS = ("bert", "roberta", "gpt2")


def memsave_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Same maths as HF's eager attention; attention weights are not returned (None)."""
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(-1, -2)) * scaling
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    mask_format = getattr(module, "memsave_mask_format", "bit")
    out = softmax_dropout_matmul(
        scores.to(value.dtype), value, dropout, module.training, mask_format=mask_format
    )
    return out.transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(IMPLEMENTATION, memsave_attention_forward)


def _model_name(module: nn.Module) -> str | None:
    parts = type(module).__module__.split(".")
    if len(parts) >= 4 and parts[0] == "transformers" and parts[1] == "models":
        return parts[2]
    return None


def convertible(module: nn.Module) -> str | None:
    """None if ``module`` is an HF attention we can convert, else the reason it is not."""
    config = getattr(module, "config", None)
    if config is None or not hasattr(config, "_attn_implementation"):
        return "not an HF attention module"
    impl = config._attn_implementation
    if impl == IMPLEMENTATION:
        return "already converted"
    if _model_name(module) not in SUPPORTED_MODELS:
        return f"model family {_model_name(module)!r} not in {SUPPORTED_MODELS}"
    if impl != "eager":
        return f"attn_implementation is {impl!r}, not 'eager'"
    if getattr(module, "reorder_and_upcast_attn", False):
        return "GPT-2 reorder_and_upcast_attn uses its own path"
    return None


def is_hf_attention(module: nn.Module) -> bool:
    """An HF module whose own forward dispatches through ``ALL_ATTENTION_FUNCTIONS``."""
    if _model_name(module) is None or not hasattr(module, "config"):
        return False
    # transformers wraps attention forwards in decorators (functools.wraps; 5.24's
    # deprecate_kwarg on BertSelfAttention/GPT2Attention/RobertaSelfAttention): the wrapper's
    # code never names ALL_ATTENTION_FUNCTIONS, so look at the function it wraps
    code = getattr(inspect.unwrap(type(module).forward), "__code__", None)
    return code is not None and "ALL_ATTENTION_FUNCTIONS" in code.co_names


def convert_attention(module: nn.Module, mask_format: str = "bit") -> None:
    """Point ``module`` at the memsave implementation (in place; parameters untouched)."""
    _register()
    config: Any = copy.copy(module.config)  # a HF config; nn.Module types it Tensor | Module
    config._attn_implementation_internal = IMPLEMENTATION  # no recursion into shared sub-configs
    module.config = config
    # a plain attribute (read back with getattr): nn.Module's typing allows only tensors there
    module.__dict__["memsave_mask_format"] = mask_format
