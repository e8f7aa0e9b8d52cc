"""Ready-made networks: `FullyConnected` MLPs and an actor-critic pair of heads."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.nn.activations import ActivationFunction
from tempo.api.nn.flatten import Flatten
from tempo.api.nn.init import InitFn
from tempo.api.nn.linear import Linear
from tempo.api.nn.module import Module, Sequential
from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _size(shape: int | Sequence[int]) -> int:
    return shape if isinstance(shape, int) else math.prod(shape)


class FullyConnected(Module):
    """Flatten → [Linear → act]* → Linear → reshape to `output_shape`."""

    def __init__(
        self,
        input_shape: int | Sequence[int],
        hidden_sizes: Sequence[int],
        output_shape: int | Sequence[int],
        act_fun: Any = "leakyrelu",
        dtype: DataTypeLike = None,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        w_init_fun: InitFn | None = None,
        b_init_fun: InitFn | None = None,
        bias: bool = True,
    ) -> None:
        super().__init__(domain, independent_domain)
        sizes = [_size(input_shape), *hidden_sizes, _size(output_shape)]
        layers: list[Module] = []
        for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(
                Linear(a, b, bias, dtype, domain, independent_domain, w_init_fun, b_init_fun)
            )
            if k < len(sizes) - 2:
                layers.append(ActivationFunction.from_(act_fun))
        self.net = Sequential(*layers, domain=domain, independent_domain=independent_domain)
        self.flat_input = not isinstance(input_shape, int)
        self.output_shape = output_shape

    def forward(self, x: Any) -> RecurrentTensor:
        y = self.net(Flatten()(x) if self.flat_input else x)
        return y if isinstance(self.output_shape, int) else y.reshape(tuple(self.output_shape))


class FullyConnectedActorCritic(Module):
    """A shared trunk with a policy head (logits) and a value head; returns both."""

    def __init__(
        self,
        input_shape: int | Sequence[int],
        hidden_sizes: Sequence[int],
        num_actions: int,
        act_fun: Any = "leakyrelu",
        dtype: DataTypeLike = None,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        w_init_fun: InitFn | None = None,
        b_init_fun: InitFn | None = None,
    ) -> None:
        super().__init__(domain, independent_domain)
        *trunk, last = list(hidden_sizes) or [_size(input_shape)]
        args = (act_fun, dtype, domain, independent_domain, w_init_fun, b_init_fun)
        self.trunk = FullyConnected(input_shape, trunk, last, *args) if hidden_sizes else None
        self.act = ActivationFunction.from_(act_fun)
        self.pi = Linear(
            last, num_actions, True, dtype, domain, independent_domain, w_init_fun, b_init_fun
        )
        self.v = Linear(last, 1, True, dtype, domain, independent_domain, w_init_fun, b_init_fun)

    def forward(self, x: Any) -> tuple[RecurrentTensor, RecurrentTensor]:
        h = self.act(self.trunk(x)) if self.trunk is not None else x
        return self.pi(h), self.v(h)
