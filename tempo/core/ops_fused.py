"""Composites a backend runs as one fused kernel: softmax and log-softmax along a dim, and
RMS / layer normalisation over the trailing dims.

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
