"""Primitives that produce or consume tensors at a point: sources (constants, fills,
random draws, symbol values, user sources), recurrences, and sinks/markers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tempo.core.dtype import DataType
from tempo.core.index_expr import IndexExpr
from tempo.core.op_base import DTypes, Op, Shapes
from tempo.core.shape import Shape


# ---------------------------------------------------------------- sources
@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class ConstOp(Op):
    """A constant array, fixed at record time."""

    value: np.ndarray
    dtype: DataType
    name: ClassVar[str] = "const"
    arity: ClassVar[int] = 0

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [Shape.from_(tuple(self.value.shape))], [self.dtype]

    def describe(self) -> str:
        return f"const{tuple(self.value.shape)}" if self.value.size > 1 else f"const({self.value})"


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class FillOp(Op):
    """A tensor of one scalar value (zeros, ones, full) with a possibly symbolic shape."""

    value: float | int | bool
    shape: Shape
    dtype: DataType
    name: ClassVar[str] = "fill"
    arity: ClassVar[int] = 0

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [self.shape], [self.dtype]

    def runtime_exprs(self) -> tuple[IndexExpr, ...]:
        return tuple(d for d in self.shape if not isinstance(d, int))


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class RandOp(Op):
    """Uniform [0, 1) samples; one fresh draw per point of the domain."""

    shape: Shape
    dtype: DataType
    name: ClassVar[str] = "rand"
    arity: ClassVar[int] = 0

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [self.shape], [self.dtype]

    def runtime_exprs(self) -> tuple[IndexExpr, ...]:
        return tuple(d for d in self.shape if not isinstance(d, int))


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class EvalSymbolOp(Op):
    """The current value of a symbol (a loop variable or a bound) as a scalar tensor."""

    symbol: IndexExpr
    dtype: DataType
    name: ClassVar[str] = "eval_symbol"
    arity: ClassVar[int] = 0

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [Shape.from_(())], [self.dtype]

    def runtime_exprs(self) -> tuple[IndexExpr, ...]:
        return (self.symbol,)

    def describe(self) -> str:
        return f"eval_symbol({self.symbol})"


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class UDFSourceOp(Op):
    """A user function producing a backend tensor at each point (data, env reset).
    `lazy_vectorized_version(dim, size)`, when given, returns the function that produces
    all `size` points along `dim` at once (leading dim `size`); the vectorisation pass asks
    for it when it batches the source over `dim`."""

    fn: Callable[..., Any]
    shape: Shape
    dtype: DataType
    with_ts: bool = False
    lazy_vectorized_version: Callable[..., Any] | None = None
    name: ClassVar[str] = "udf_source"
    arity: ClassVar[int] = 0

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [self.shape], [self.dtype]


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class MergeOp(Op):
    """A recurrence: inputs are branches; at each point the first branch whose condition
    holds gives the value (conditions live on the SDG edges)."""

    shape: Shape
    dtype: DataType
    name: ClassVar[str] = "merge"
    variadic: ClassVar[bool] = True

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [self.shape], [self.dtype]


# ---------------------------------------------------------------- sinks and markers
@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class SinkUDFOp(Op):
    """Calls a user function with the input tensors (and symbol values if `with_ts`)."""

    fn: Callable[..., Any]
    with_ts: bool = False
    name: ClassVar[str] = "sink_udf"
    variadic: ClassVar[bool] = True

    @property
    def num_outputs(self) -> int:
        return 0

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [], []


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class MapUDFOp(Op):
    """A user function from its input tensors (one for `map_udf`; an env step also reads
    its reset's observation to stay ordered after it) to one tensor of a declared shape
    and dtype."""

    fn: Callable[..., Any]
    shape: Shape
    dtype: DataType
    with_ts: bool = False
    lazy_vectorized_version: Callable[..., Any] | None = None  # as UDFSourceOp's
    name: ClassVar[str] = "map_udf"
    variadic: ClassVar[bool] = True

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [self.shape], [self.dtype]


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class BarrierOp(Op):
    """A named marker between the user functions recorded before it and those recorded
    after it (the scheduler orders them: `tempo.schedule.barrier_order`)."""

    label: str
    name: ClassVar[str] = "barrier"
    variadic: ClassVar[bool] = True

    @property
    def num_outputs(self) -> int:
        return 0

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [], []


# A UDF source or map UDF recorded after a barrier carries the barrier's id in this tag:
# passes rebuild such ops with new ids (vectorisation batches them), and tags go along.
AFTER_BARRIER = "__after_barrier:"


def barrier_before(op: Op) -> int | None:
    """The id of the last barrier recorded before `op` (from its tag), None if none."""
    for tag in op.tags:
        if tag.startswith(AFTER_BARRIER):
            return int(tag[len(AFTER_BARRIER):])
    return None
