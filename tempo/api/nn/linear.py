"""`Linear` and `Embedding`: the two table-lookup/affine layers every model starts from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tempo.api.nn import init as initf
from tempo.api.nn.init import InitFn
from tempo.api.nn.module import Module, float_input
from tempo.api.tensor_base import label
from tempo.core import naming
from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike, dtypes
from tempo.core.errors import DTypeError, ShapeError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


class Linear(Module):
    """`x @ w.T + b` with torch.nn.Linear's layout (w: (out, in)) so weights copy over."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        dtype: DataTypeLike = None,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        w_init_fun: InitFn | None = None,
        b_init_fun: InitFn | None = None,
    ) -> None:
        super().__init__(domain, independent_domain)
        dt = dtypes.from_(dtype) if dtype is not None else dtypes.default_float
        self.in_features, self.out_features = in_features, out_features
        w_init = w_init_fun or initf.linear_init_uniform
        self.w = self.param_from_init(
            w_init(shape=(out_features, in_features), dtype=dt, domain=None)
        )
        self.b: RecurrentTensor | None = None
        if bias:
            b_init = b_init_fun or initf.zeros
            self.b = self.bias_from_init(b_init(shape=(out_features,), dtype=dt, domain=None))

    def forward(self, x: Any) -> RecurrentTensor:
        x = float_input(x, "Linear")
        last = x.shape.at(-1) if x.ndim else None
        if last is None or isinstance(last, int) and last != self.in_features:
            raise ShapeError(f"Linear({self.in_features}, {self.out_features}) takes inputs "
                             f"whose last dim is {self.in_features}, got shape "
                             f"{naming.shape_word(x.shape)} ({label(x)})", site=user_site())
        # Elementwise-sum form for vectors avoids matmul's squeezing of size-1 dims.
        if x.ndim == 1:
            y = (self.w * x.unsqueeze(0)).sum(1)
        else:
            y = x @ self.w.transpose(0, 1)
        return y + self.b if self.b is not None else y


class Embedding(Module):
    """A (vocab, dim) table read with integer indices (`index(0, x)`)."""

    def __init__(
        self,
        vocab_size: int,
        encoded_dim_size: int,
        dtype: DataTypeLike = None,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        w_init_fun: InitFn | None = None,
    ) -> None:
        super().__init__(domain, independent_domain)
        dt = dtypes.from_(dtype) if dtype is not None else dtypes.default_float
        w_init = w_init_fun or initf.normal
        self.embed_table = self.param_from_init(
            w_init(shape=(vocab_size, encoded_dim_size), dtype=dt, domain=None)
        )

    def forward(self, x: Any) -> RecurrentTensor:
        from tempo.api.recurrent_tensor import RecurrentTensor

        x = RecurrentTensor.lift(x)
        if not dtypes.is_integer(x.dtype):
            raise DTypeError(f"Embedding needs integer indices, got {x.dtype}", site=user_site())
        if x.ndim <= 1:
            return self.embed_table.index(0, x)
        flat = self.embed_table.index(0, x.flatten())
        return flat.reshape((*x.shape, self.embed_table.shape[-1]))
