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
from tempo.api.nn.linear import Embedding, Linear
from tempo.api.nn.module import Module, Sequential

__all__ = [
    "ActivationFunction", "Elu", "Embedding", "LeakyRelu", "Linear", "Mish", "Module", "Relu",
    "Sequential", "Sigmoid", "Softmax", "Softplus", "Swish", "Tanh",
]
