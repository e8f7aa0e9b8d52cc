"""The op base class and small shape helpers shared by every primitive (see `ops`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from tempo.core.domain import Domain
from tempo.core.dtype import DataType
from tempo.core.errors import ShapeError
from tempo.core.index_expr import IndexExpr
from tempo.core.shape import Shape

Shapes = list[Shape]
DTypes = list[DataType]


def norm_dim(dim: int, ndim: int, what: str = "dim") -> int:
    """A non-negative dim in [0, ndim); negative dims count from the end as in torch."""
    d = dim + ndim if dim < 0 else dim
    if not 0 <= d < max(ndim, 1):
        raise ShapeError(f"{what} {dim} is out of range for a tensor of {ndim} dims")
    return d


def _dims(shape: Shape) -> list[Any]:
    return list(shape)


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class Op:
    """One node of the SDG: executes once per point of `domain`."""

    op_id: int
    domain: Domain
    site: str = ""
    tags: frozenset[str] = field(default_factory=frozenset)

    name: ClassVar[str] = "op"
    variadic: ClassVar[bool] = False
    arity: ClassVar[int] = 1

    @property
    def num_outputs(self) -> int:
        return 1

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        """Output shapes and dtypes from input shapes and dtypes (raise on mismatch)."""
        return [shapes[0]], [dts[0]]

    @classmethod
    def input_dtypes(cls, dts: DTypes, **params: Any) -> DTypes:
        """The dtypes the kernels receive the inputs in (`params`: the op's fields). The
        front end casts the inputs to them when it records the op: dtype promotion happens
        once, there, so no backend promotes and all compute in the same dtypes."""
        return list(dts)

    def runtime_exprs(self) -> tuple[IndexExpr, ...]:
        """Index expressions whose current values the kernel receives as trailing args."""
        return ()

    def describe(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{self.describe()}#{self.op_id}"
