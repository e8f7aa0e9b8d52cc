"""Composites a backend runs as one fused kernel: softmax and log-softmax along a dim,
RMS / layer normalisation over the trailing dims, and scaled dot-product attention.

The API records these directly (`softmax()`, `RMSNorm`, `LayerNorm`, ...) rather than the
compiler recognising the five-op pattern later: autodiff then applies their own exact
gradient rules (`tempo.prims.fused`), which read only the fused output, so training keeps
no intermediate (exp, sum, max) alive; and no pattern matcher can miss a variant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tempo.core.dtype import dtypes
from tempo.core.errors import DTypeError, ShapeError
from tempo.core.op_base import DTypes, Op, Shapes, norm_dim
from tempo.core.shape import Shape, dims_equal


def _float_input(op: Op, dts: DTypes) -> None:
    if not dtypes.is_float(dts[0]):
        raise DTypeError(f"{op.describe()} of a {dts[0]} tensor (cast it to a float dtype)")


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class SoftmaxOp(Op):
    """exp(x - max) / sum along `dim` (or, with `log`, x - max - log(sum exp(x - max))),
    always numerically stable."""

    dim: int
    log: bool = False
    name: ClassVar[str] = "softmax"

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        _float_input(self, dts)
        norm_dim(self.dim, len(shapes[0]))
        return [shapes[0]], [dts[0]]

    def describe(self) -> str:
        return "log_softmax" if self.log else "softmax"


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class NormOp(Op):
    """(x - mean) / sqrt(var + eps) over the last `n_dims` dims (layer norm, biased
    variance), or with `center=False` x / sqrt(mean(x²) + eps) (RMS norm); no affine part."""

    n_dims: int
    eps: float
    center: bool
    name: ClassVar[str] = "norm"

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        _float_input(self, dts)
        if not 1 <= self.n_dims <= len(shapes[0]):
            raise ShapeError(f"{self.describe()} over the last {self.n_dims} dims of a tensor "
                             f"of shape {shapes[0]}")
        return [shapes[0]], [dts[0]]

    def describe(self) -> str:
        return "layer_norm" if self.center else "rms_norm"


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class AttentionOp(Op):
    """softmax(scale * q @ k^T + mask) @ v over the last two dims (torch's
    `scaled_dot_product_attention`): inputs q (..., L, E), k (..., S, E), v (..., S, Ev)
    with equal leading dims, and with `masked` a fourth, the mask (broadcast to
    (..., L, S): boolean, True where a key is attended, or float, added to the scores);
    `causal` attends key j from query i only where j <= i."""

    scale: float
    causal: bool = False
    masked: bool = False
    name: ClassVar[str] = "attention"
    variadic: ClassVar[bool] = True

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        if len(shapes) != 3 + self.masked:
            raise ShapeError(f"{self.describe()} takes {3 + self.masked} inputs, got "
                             f"{len(shapes)}")
        q, k, v = (list(s) for s in shapes[:3])
        if not all(dtypes.is_float(d) for d in dts[:3]) or len(set(dts[:3])) != 1:
            raise DTypeError(f"{self.describe()} needs q, k and v of one float dtype, got "
                             f"{[str(d) for d in dts[:3]]}")
        if self.masked and not (dtypes.is_bool(dts[3]) or dts[3] == dts[0]):
            raise DTypeError(f"{self.describe()}: the mask must be bool or {dts[0]}, got "
                             f"{dts[3]}")
        ok = len(q) >= 2 and len(k) == len(q) == len(v) and all(
            dims_equal(a, b) and dims_equal(a, c) for a, b, c in zip(q[:-2], k[:-2], v[:-2]))
        if not ok or not dims_equal(q[-1], k[-1]) or not dims_equal(k[-2], v[-2]):
            raise ShapeError(f"{self.describe()} needs q (..., L, E), k (..., S, E) and v "
                             f"(..., S, Ev) with equal leading dims, got {shapes[0]}, "
                             f"{shapes[1]}, {shapes[2]}")
        if self.masked and len(shapes[3]) > len(q):
            raise ShapeError(f"{self.describe()}: the mask {shapes[3]} has more dims than the "
                             f"scores (..., L, S)")
        return [Shape.from_((*q[:-1], v[-1]))], [dts[0]]

    def describe(self) -> str:
        return "causal_attention" if self.causal else "attention"
