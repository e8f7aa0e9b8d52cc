"""Convolutions (1-3 spatial dims, optionally transposed): one `ConvOp` primitive, with
missing batch and out-channel dims added here and removed from the result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import lift, record1
from tempo.core import naming, ops
from tempo.core.errors import ShapeError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor

IntOrTuple = int | Sequence[int]


def _tup(v: IntOrTuple, n: int, what: str) -> tuple[int, ...]:
    t = (v,) * n if isinstance(v, int) else tuple(v)
    if len(t) != n:
        raise ShapeError(f"conv {what} {v} does not fit {n} spatial dims", site=user_site())
    return t


def conv_general(input: Any, weight: Any, n_dims: int, stride: IntOrTuple = 1,  # noqa: A002
                 padding: IntOrTuple = 0, dilation: IntOrTuple = 1, transposed: bool = False,
                 output_padding: IntOrTuple = 0, groups: int = 1) -> RecurrentTensor:
    """input (N?, C_in, *sp), weight (C_out?, C_in/groups, *k) (transposed: (C_in, C_out/g, *k))."""
    if n_dims not in (1, 2, 3):
        raise ShapeError(f"conv supports 1-3 spatial dims, got {n_dims}", site=user_site())
    x, w = lift(input), lift(weight)
    no_batch = x.ndim == n_dims + 1
    no_out = w.ndim == n_dims + 1
    if x.ndim not in (n_dims + 1, n_dims + 2) or w.ndim not in (n_dims + 1, n_dims + 2):
        raise ShapeError(f"conv{n_dims}d of input {naming.shape_word(x.shape)} and weight "
                         f"{naming.shape_word(w.shape)}: the input needs {n_dims + 1} or "
                         f"{n_dims + 2} dims, the weight too", site=user_site())
    if no_batch:
        x = x.unsqueeze(0)
    if no_out:
        w = w.unsqueeze(1 if transposed else 0)
    have, want = x.shape.at(1), (w.shape.at(0) if transposed else w.shape.at(1) * groups)
    if isinstance(have, int) and isinstance(want, int) and have != want:
        raise ShapeError(f"conv{n_dims}d: the input {naming.shape_word(x.shape)} has {have} "
                         f"channels (dim {0 if no_batch else 1}), but the weight "
                         f"{naming.shape_word(w.shape)} with groups={groups} takes {want}",
                         site=user_site())
    out = record1(ops.ConvOp, [x, w], n_dims=n_dims, stride=_tup(stride, n_dims, "stride"),
                  padding=_tup(padding, n_dims, "padding"),
                  dilation=_tup(dilation, n_dims, "dilation"), transposed=transposed,
                  output_padding=_tup(output_padding, n_dims, "output_padding"), groups=groups)
    if no_out:
        out = out.squeeze(1)
    if no_batch:
        out = out.squeeze(0)
    return out


convolution = conv_general


def conv1d(input: Any, weight: Any, stride: IntOrTuple = 1, padding: IntOrTuple = 0,  # noqa: A002
           dilation: IntOrTuple = 1, transposed: bool = False, output_padding: IntOrTuple = 0,
           groups: int = 1) -> RecurrentTensor:
    return conv_general(input, weight, 1, stride, padding, dilation, transposed,
                        output_padding, groups)


def conv2d(input: Any, weight: Any, stride: IntOrTuple = 1, padding: IntOrTuple = 0,  # noqa: A002
           dilation: IntOrTuple = 1, transposed: bool = False, output_padding: IntOrTuple = 0,
           groups: int = 1) -> RecurrentTensor:
    return conv_general(input, weight, 2, stride, padding, dilation, transposed,
                        output_padding, groups)


def conv3d(input: Any, weight: Any, stride: IntOrTuple = 1, padding: IntOrTuple = 0,  # noqa: A002
           dilation: IntOrTuple = 1, transposed: bool = False, output_padding: IntOrTuple = 0,
           groups: int = 1) -> RecurrentTensor:
    return conv_general(input, weight, 3, stride, padding, dilation, transposed,
                        output_padding, groups)


class ConvOps:
    """Convolution methods mixed into RecurrentTensor (`self` is the input)."""

    conv_general = conv_general
    convolution = conv_general
    conv1d = conv1d
    conv2d = conv2d
    conv3d = conv3d
