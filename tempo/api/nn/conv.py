"""`Conv{1,2,3}d` and `ConvTransposed{1,2,3}d` with torch's weight layouts, so weights
copy over unchanged; the bias is stored broadcastable as (out, 1, ...)."""

from __future__ import annotations

import inspect
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.nn import init as initf
from tempo.api.nn.init import InitFn
from tempo.api.nn.module import Module, float_input
from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike, dtypes

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor

IntOrTuple = int | tuple[int, ...]


def _tup(v: IntOrTuple, n: int) -> tuple[int, ...]:
    return (v,) * n if isinstance(v, int) else tuple(v)


class _ConvNd(Module):
    n_dims = 1
    transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOrTuple,
        stride: IntOrTuple = 1,
        padding: IntOrTuple = 0,
        dilation: IntOrTuple = 1,
        groups: int = 1,
        bias: bool = True,
        dtype: DataTypeLike = None,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        w_init_fun: InitFn | None = None,
        b_init_fun: InitFn | None = None,
        output_padding: IntOrTuple = 0,
    ) -> None:
        super().__init__(domain, independent_domain)
        n = self.n_dims
        dt = dtypes.from_(dtype) if dtype is not None else dtypes.default_float
        self.kernel_size, self.stride = _tup(kernel_size, n), _tup(stride, n)
        self.padding, self.dilation = _tup(padding, n), _tup(dilation, n)
        self.output_padding, self.groups = _tup(output_padding, n), groups
        w_shape = (
            (in_channels, out_channels // groups)
            if self.transposed
            else (out_channels, in_channels // groups)
        ) + self.kernel_size
        self.w = self.param_from_init(
            (w_init_fun or initf.kaiming_normal)(shape=w_shape, dtype=dt, domain=None)
        )
        self.b: RecurrentTensor | None = None
        if bias:
            fan_in = w_shape[1] * int(np.prod(self.kernel_size))
            bound = 1.0 / math.sqrt(fan_in)
            b_shape = (out_channels,) + (1,) * n
            self.b = self.bias_from_init(
                b_init_fun(shape=b_shape, dtype=dt, domain=None)
                if b_init_fun is not None
                else initf.uniform(b_shape, -bound, bound, dt)
            )

    def forward(self, x: Any) -> RecurrentTensor:
        from tempo.api.recurrent_tensor import RecurrentTensor as RT

        y = RT.conv_general(
            float_input(x, type(self).__name__),
            self.w,
            self.n_dims,
            self.stride,
            self.padding,
            self.dilation,
            self.transposed,
            self.output_padding,
            self.groups,
        )
        return y + self.b if self.b is not None else y


class Conv1d(_ConvNd):
    """torch.nn.Conv1d: input (N?, C_in, L)."""

    n_dims = 1


class Conv2d(_ConvNd):
    """torch.nn.Conv2d: input (N?, C_in, H, W)."""

    n_dims = 2

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOrTuple = 3,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        super().__init__(in_channels, out_channels, kernel_size, *args, **kwargs)


class Conv3d(_ConvNd):
    """torch.nn.Conv3d: input (N?, C_in, D, H, W)."""

    n_dims = 3

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOrTuple = 3,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        super().__init__(in_channels, out_channels, kernel_size, *args, **kwargs)


def _kernel_size_3(cls: type[_ConvNd]) -> None:
    """Show the full argument list (kernel_size defaulting to 3) on a class whose __init__
    forwards *args/**kwargs to `_ConvNd.__init__`, for `inspect.signature` and IDEs."""
    sig = inspect.signature(_ConvNd.__init__)
    params = [p.replace(default=3) if p.name == "kernel_size" else p
              for p in sig.parameters.values()]
    # ignore: inspect.signature reads __signature__; typeshed does not declare it on functions
    cls.__init__.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]


_kernel_size_3(Conv2d)
_kernel_size_3(Conv3d)


class ConvTransposed1d(Conv1d):
    """torch.nn.ConvTranspose1d (weight (C_in, C_out/groups, k))."""

    transposed = True


class ConvTransposed2d(Conv2d):
    transposed = True


class ConvTransposed3d(Conv3d):
    transposed = True
