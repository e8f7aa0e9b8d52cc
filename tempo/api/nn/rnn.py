"""`GRUCell` and `LSTMCell` with torch's gate order and weight layout, one step per call;
the time recurrence is written by the user with a placeholder over `t`."""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Any

from tempo.api.nn import init as initf
from tempo.api.nn.init import InitFn
from tempo.api.nn.linear import Linear
from tempo.api.nn.module import Module
from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike, dtypes
from tempo.core.errors import TempoError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _gate(x: RecurrentTensor, k: int, h: int) -> RecurrentTensor:
    return x.slice_dim(x.ndim - 1, k * h, (k + 1) * h)


class _Cell(Module):
    gates = 1

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        dtype: DataTypeLike,
        domain: DomainLike,
        independent_domain: DomainLike,
        w_init_fun: InitFn | None = None,
        b_init_fun: InitFn | None = None,
    ) -> None:
        super().__init__(domain, independent_domain)
        self.hidden_size = hidden_size
        # torch initialises every RNN tensor with U(±1/sqrt(hidden)).
        bound = 1.0 / math.sqrt(hidden_size)
        default = partial(_uniform_init, bound=bound)
        out = self.gates * hidden_size
        w_init, b_init = w_init_fun or default, b_init_fun or default
        self.ih = Linear(input_size, out, bias, dtype, domain, independent_domain, w_init, b_init)
        self.hh = Linear(hidden_size, out, bias, dtype, domain, independent_domain, w_init, b_init)


def _uniform_init(*, shape: Any, dtype: Any, domain: Any, bound: float) -> RecurrentTensor:
    return initf.uniform(shape, -bound, bound, dtype, domain)


class GRUCell(_Cell):
    """h' = (1-z)·n + z·h with r, z, n gates as torch.nn.GRUCell (weights ih.w, hh.w)."""

    gates = 3

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        dtype: DataTypeLike = dtypes.float32,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        w_init_fun: InitFn | None = None,
        b_init_fun: InitFn | None = None,
    ) -> None:
        super().__init__(
            input_size, hidden_size, bias, dtype, domain, independent_domain, w_init_fun, b_init_fun
        )

    def forward(self, x: Any, h: Any) -> RecurrentTensor:
        H = self.hidden_size  # noqa: N806
        gi, gh = self.ih(x), self.hh(h)
        r = (_gate(gi, 0, H) + _gate(gh, 0, H)).sigmoid()
        z = (_gate(gi, 1, H) + _gate(gh, 1, H)).sigmoid()
        n = (_gate(gi, 2, H) + r * _gate(gh, 2, H)).tanh()
        return (1.0 - z) * n + z * h


class LSTMCell(_Cell):
    """(h', c') from input, forget, cell and output gates as torch.nn.LSTMCell."""

    gates = 4

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        dtype: DataTypeLike = dtypes.float32,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        w_init_fun: InitFn | None = None,
        b_init_fun: InitFn | None = None,
    ) -> None:
        super().__init__(
            input_size, hidden_size, bias, dtype, domain, independent_domain, w_init_fun, b_init_fun
        )

    def forward(self, x: Any, hc: tuple[Any, Any]) -> tuple[RecurrentTensor, RecurrentTensor]:
        H = self.hidden_size  # noqa: N806
        if not isinstance(hc, tuple | list) or len(hc) != 2:
            raise TempoError(f"LSTMCell.forward(x, (h, c)) takes the state as a pair (h, c), "
                             f"got {type(hc).__name__} (torch.nn.LSTMCell's form; "
                             "a GRUCell takes h alone)", site=user_site())
        h, c = hc
        g = self.ih(x) + self.hh(h)
        i, f = _gate(g, 0, H).sigmoid(), _gate(g, 1, H).sigmoid()
        cand, o = _gate(g, 2, H).tanh(), _gate(g, 3, H).sigmoid()
        c2 = f * c + i * cand
        return o * c2.tanh(), c2
