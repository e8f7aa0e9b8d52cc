"""Drop-in PyTorch transformer layers that keep less for backward (after Tempo, NeurIPS 2022).

Stands alone: imports nothing else from ``tempo``; transformers is used only if a model has it.
"""

from tempo.memsave.attention import (
    SoftmaxDropoutMatmul,
    SoftmaxDropoutMatmulFunction,
    fused_attention_probs_matmul,
    softmax_dropout_matmul,
)
from tempo.memsave.convert import TECHNIQUES, ConversionReport, convert
from tempo.memsave.gelu import InplaceGELU, InplaceGELUFunction, gelu_inverse, inplace_gelu
from tempo.memsave.layernorm import InplaceLayerNorm, InplaceLayerNormFunction, inplace_layer_norm

__all__ = [
    "TECHNIQUES",
    "ConversionReport",
    "InplaceGELU",
    "InplaceGELUFunction",
    "InplaceLayerNorm",
    "InplaceLayerNormFunction",
    "SoftmaxDropoutMatmul",
    "SoftmaxDropoutMatmulFunction",
    "convert",
    "fused_attention_probs_matmul",
    "gelu_inverse",
    "inplace_gelu",
    "inplace_layer_norm",
    "softmax_dropout_matmul",
]
