"""Neural-network layers over recurrent tensors (API §6.1): parameters are placeholders
that evolve along an update domain, so training is just another recurrence."""

from tempo.api.nn.activations import (
    ActivationFunction,
    Elu,
    LeakyRelu,
    Mish,
    Relu,
    Sigmoid,
    Softmax,
    Softplus,
    Swish,
    Tanh,
)
from tempo.api.nn.attention import MultiHeadAttention
from tempo.api.nn.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTransposed1d,
    ConvTransposed2d,
    ConvTransposed3d,
)
from tempo.api.nn.linear import Embedding, Linear
from tempo.api.nn.module import Module, Sequential
from tempo.api.nn.norm import LayerNorm, RMSNorm

__all__ = [
    "ActivationFunction",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTransposed1d",
    "ConvTransposed2d",
    "ConvTransposed3d",
    "Elu",
    "Embedding",
    "LayerNorm",
    "LeakyRelu",
    "Linear",
    "Mish",
    "Module",
    "MultiHeadAttention",
    "RMSNorm",
    "Relu",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Softplus",
    "Swish",
    "Tanh",
]
