"""`SwiGLU`: swish(x W + b) * (x V + c), the gated feed-forward of modern transformers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tempo.api.nn.activations import swish
from tempo.api.nn.init import InitFn
from tempo.api.nn.linear import Linear
from tempo.api.nn.module import Module
from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike, dtypes

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


class SwiGLU(Module):
    """Two Linear layers sharing the input; the first is gated through swish."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        dtype: DataTypeLike = dtypes.float32,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        bias: bool = True,
        w_init_fun: InitFn | None = None,
        v_init_fun: InitFn | None = None,
        b_init_fun: InitFn | None = None,
        c_init_fun: InitFn | None = None,
    ) -> None:
        super().__init__(domain, independent_domain)
        self.swish_linear_layer = Linear(
            in_features,
            out_features,
            bias,
            dtype,
            domain,
            independent_domain,
            w_init_fun,
            b_init_fun,
        )
        self.linear_layer = Linear(
            in_features,
            out_features,
            bias,
            dtype,
            domain,
            independent_domain,
            v_init_fun,
            c_init_fun,
        )

    def forward(self, x: Any) -> RecurrentTensor:
        return swish(self.swish_linear_layer(x)) * self.linear_layer(x)
