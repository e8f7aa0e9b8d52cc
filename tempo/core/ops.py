"""The primitive op catalogue: every op the compiler, scheduler and backends know.

Each op is a frozen dataclass holding its parameters and its shape/dtype rule (`infer`).
Composite ops (softmax, mean, attention, ...) are built from these in `tempo.api`. Every
other rule of a primitive (gradient, batching, cost, one kernel per backend) is registered
in one `primitive(...)` call in its family module of `tempo.prims`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tempo.core.dtype import DataType, dtypes
from tempo.core.errors import DTypeError, ShapeError
from tempo.core.index_expr import IndexExpr
from tempo.core.naming import dtype_word, shape_word
from tempo.core.op_base import DTypes, Op, Shapes, _dims, norm_dim  # noqa: F401
from tempo.core.op_sources import (  # noqa: F401 - the catalogue is one namespace
    BarrierOp,
    ConstOp,
    EvalSymbolOp,
    FillOp,
    MapUDFOp,
    MergeOp,
    RandOp,
    SinkUDFOp,
    UDFSourceOp,
)
from tempo.core.ops_fused import AttentionOp, NormOp, SoftmaxOp  # noqa: F401 - one namespace
from tempo.core.ops_region import RegionOp  # noqa: F401 - one namespace
from tempo.core.ops_tiled import TiledAttentionOp, TiledReduceOp  # noqa: F401 - one namespace
from tempo.core.shape import Shape


# ---------------------------------------------------------------- movement
@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class IdentOp(Op):
    """Identity: materialises an indexed read as a tensor of its own."""

    name: ClassVar[str] = "ident"


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class ReshapeOp(Op):
    shape: Shape
    name: ClassVar[str] = "reshape"

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        src, dst = shapes[0], self.shape
        if src.is_static() and dst.is_static() and src.prod() != dst.prod():
            raise ShapeError(f"cannot reshape {src} into {dst}")
        return [dst], [dts[0]]

    def runtime_exprs(self) -> tuple[IndexExpr, ...]:
        return tuple(d for d in self.shape if not isinstance(d, int))


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class PermuteOp(Op):
    dims: tuple[int, ...]
    name: ClassVar[str] = "permute"

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        src = _dims(shapes[0])
        if sorted(self.dims) != list(range(len(src))):
            raise ShapeError(f"permute dims {self.dims} do not fit shape {shapes[0]}")
        return [Shape.from_(tuple(src[d] for d in self.dims))], [dts[0]]


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class ExpandOp(Op):
    """Broadcast size-1 dims (and new leading dims) to `shape`."""

    shape: Shape
    name: ClassVar[str] = "expand"

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        out = Shape.broadcast(shapes[0], self.shape)
        if out != self.shape:
            raise ShapeError(f"cannot expand {shapes[0]} to {self.shape}")
        return [self.shape], [dts[0]]

    def runtime_exprs(self) -> tuple[IndexExpr, ...]:
        return tuple(d for d in self.shape if not isinstance(d, int))


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class SliceOp(Op):
    """x[..., start:start+length, ...] along one spatial dim; start may be symbolic."""

    dim: int
    start: Any
    length: Any
    name: ClassVar[str] = "slice"

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        src = _dims(shapes[0])
        src[self.dim] = self.length
        return [Shape.from_(tuple(src))], [dts[0]]

    def runtime_exprs(self) -> tuple[IndexExpr, ...]:
        return tuple(e for e in (self.start, self.length) if not isinstance(e, int))


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class PadOp(Op):
    """Pad each dim by (before, after) with a mode: constant, reflect, replicate."""

    padding: tuple[tuple[int, int], ...]
    mode: str = "constant"
    value: float = 0.0
    name: ClassVar[str] = "pad"

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        src = _dims(shapes[0])
        if len(self.padding) > len(src):
            raise ShapeError(f"padding {self.padding} has more dims than shape {shapes[0]}")
        out = [d + sum(self.padding[i]) if i < len(self.padding) else d for i, d in enumerate(src)]
        return [Shape.from_(tuple(out))], [dts[0]]


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class CatOp(Op):
    dim: int
    name: ClassVar[str] = "cat"
    variadic: ClassVar[bool] = True

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        first = _dims(shapes[0])
        total: Any = 0
        for s in shapes:
            d = _dims(s)
            if len(d) != len(first) or any(
                i != self.dim and Shape.from_((a,)) != Shape.from_((b,))
                for i, (a, b) in enumerate(zip(d, first))
            ):
                words = ", ".join(shape_word(x) for x in shapes)
                raise ShapeError(f"cat along dim {self.dim} of shapes {words}, which differ "
                                 "off that dim")
            total = total + d[self.dim]
        first[self.dim] = total
        return [Shape.from_(tuple(first))], [dtypes.upcast(*dts)]

    @classmethod
    def input_dtypes(cls, dts: DTypes, **params: Any) -> DTypes:
        return [dtypes.upcast(*dts)] * len(dts)


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class FlipOp(Op):
    dims: tuple[int, ...]
    name: ClassVar[str] = "flip"


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class IndexSelectOp(Op):
    """x.index_select(dim, index); a 0-d index removes the dim."""

    dim: int
    name: ClassVar[str] = "index_select"
    arity: ClassVar[int] = 2

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        if not dtypes.is_integer(dts[1]):
            raise DTypeError(f"index_select needs an integer index, got {dtype_word(dts[1])}")
        src, idx = _dims(shapes[0]), _dims(shapes[1])
        if len(idx) > 1:
            raise ShapeError(f"index_select needs a 0-d or 1-d index, got shape {shapes[1]}")
        out = src[: self.dim] + idx + src[self.dim + 1 :]
        return [Shape.from_(tuple(out))], [dts[0]]


def _check_index(what: str, dt: DataType) -> None:
    if not dtypes.is_integer(dt):
        raise DTypeError(f"{what} needs an integer index, got {dtype_word(dt)}")


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class GatherOp(Op):
    """torch.gather: out[i][j] = x[index[i][j]][j] along `dim`; shape of the index."""

    dim: int
    name: ClassVar[str] = "gather"
    arity: ClassVar[int] = 2

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        _check_index("gather", dts[1])
        if len(shapes[0]) != len(shapes[1]):
            raise ShapeError(f"gather needs index of {len(shapes[0])} dims, got {shapes[1]}")
        return [shapes[1]], [dts[0]]


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class ScatterAddOp(Op):
    """sink.scatter_add(dim, index, src) (inputs: sink, index, src)."""

    dim: int
    name: ClassVar[str] = "scatter_add"
    arity: ClassVar[int] = 3

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        _check_index("scatter_add", dts[1])
        if not len(shapes[0]) == len(shapes[1]) == len(shapes[2]):
            raise ShapeError(f"scatter_add needs equal ranks, got {shapes}")
        if dts[0] != dts[2]:
            raise DTypeError(f"scatter_add of {dtype_word(dts[2])} into {dtype_word(dts[0])}")
        return [shapes[0]], [dts[0]]

    @classmethod
    def input_dtypes(cls, dts: DTypes, **params: Any) -> DTypes:
        return [dts[0], dts[1], dts[0]]  # the source in the sink's dtype


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class IndexAddOp(Op):
    """x.index_add(dim, index, src, alpha) (inputs: x, index, src)."""

    dim: int
    alpha: float = 1.0
    name: ClassVar[str] = "index_add"
    arity: ClassVar[int] = 3

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        _check_index("index_add", dts[1])
        if len(shapes[1]) > 1:
            raise ShapeError(f"index_add needs a 0-d or 1-d index, got shape {shapes[1]}")
        if dts[0] != dts[2]:
            raise DTypeError(f"index_add of {dtype_word(dts[2])} into {dtype_word(dts[0])}")
        x = _dims(shapes[0])
        want = Shape.from_(tuple(x[: self.dim] + _dims(shapes[1]) + x[self.dim + 1 :]))
        if len(shapes[2]) != len(want) or not want == shapes[2]:
            raise ShapeError(f"index_add source of shape {shapes[2]} into {shapes[0]} along "
                             f"dim {self.dim} with an index of shape {shapes[1]}: the source "
                             f"must have shape {want}")
        return [shapes[0]], [dts[0]]

    @classmethod
    def input_dtypes(cls, dts: DTypes, **params: Any) -> DTypes:
        return [dts[0], dts[1], dts[0]]  # the source in x's dtype


# ---------------------------------------------------------------- elementwise
_FLOAT_UNARY = {"exp", "ln", "sqrt", "sin", "cos", "tan", "sigmoid", "erf", "tanh"}
_SAME_UNARY = {"neg", "abs", "relu", "floor", "ceil", "round", "trunc", "sign"}
_BOOL_UNARY = {"not", "isnan", "isinf"}
UNARY_FNS = frozenset(_FLOAT_UNARY | _SAME_UNARY | _BOOL_UNARY)

_ARITH_BINARY = {"add", "sub", "mul", "pow", "maximum", "minimum", "fmod"}
_CMP_BINARY = {"lt", "le", "gt", "ge", "eq", "ne"}
_BOOL_BINARY = {"and", "or", "xor"}
BINARY_FNS = frozenset(_ARITH_BINARY | _CMP_BINARY | _BOOL_BINARY | {"div"})


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class UnaryOp(Op):
    """An elementwise function of one tensor, named by `fn` (see UNARY_FNS)."""

    fn: str
    name: ClassVar[str] = "unary"

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        dt = dts[0]
        if self.fn in _FLOAT_UNARY:
            dt = dtypes.least_upper_float(dt)
        elif self.fn in _BOOL_UNARY:
            dt = dtypes.bool_
        elif self.fn == "neg" and dtypes.is_unsigned_int(dt):
            dt = dtypes.least_upper_signed_int(dt)
        return [shapes[0]], [dt]

    @classmethod
    def input_dtypes(cls, dts: DTypes, **params: Any) -> DTypes:
        """Float functions take ints as `least_upper_float`; `neg` takes unsigned ints as
        the signed type above them (torch would wrap around)."""
        fn, dt = params["fn"], dts[0]
        if fn in _FLOAT_UNARY and not dtypes.is_float(dt):
            return [dtypes.least_upper_float(dt)]
        if fn == "neg" and dtypes.is_unsigned_int(dt):
            return [dtypes.least_upper_signed_int(dt)]
        return [dt]

    def describe(self) -> str:
        return self.fn


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class BinaryOp(Op):
    """An elementwise function of two broadcast tensors, named by `fn` (see BINARY_FNS)."""

    fn: str
    name: ClassVar[str] = "binary"
    arity: ClassVar[int] = 2

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        shape = Shape.broadcast(shapes[0], shapes[1])
        dt = dtypes.upcast(dts[0], dts[1])
        if self.fn in _CMP_BINARY or self.fn in _BOOL_BINARY:
            dt = dtypes.bool_
        elif self.fn == "div":
            dt = dtypes.least_upper_float(dt)
        return [shape], [dt]

    @classmethod
    def input_dtypes(cls, dts: DTypes, **params: Any) -> DTypes:
        """Both operands in their upcast; true division of ints in `least_upper_float`."""
        dt = dtypes.upcast(dts[0], dts[1])
        if params["fn"] == "div":
            dt = dtypes.least_upper_float(dt)
        return [dt, dt]

    def describe(self) -> str:
        return self.fn


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class WhereOp(Op):
    """where(cond, a, b) with broadcasting."""

    name: ClassVar[str] = "where"
    arity: ClassVar[int] = 3

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        if not dtypes.is_bool(dts[0]):
            raise DTypeError(f"where needs a bool condition, got {dtype_word(dts[0])}")
        return [Shape.broadcast(*shapes)], [dtypes.upcast(dts[1], dts[2])]

    @classmethod
    def input_dtypes(cls, dts: DTypes, **params: Any) -> DTypes:
        dt = dtypes.upcast(dts[1], dts[2])
        return [dts[0], dt, dt]


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class CastOp(Op):
    dtype: DataType
    name: ClassVar[str] = "cast"

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [shapes[0]], [self.dtype]

    def describe(self) -> str:
        return f"cast({self.dtype})"


# ---------------------------------------------------------------- reductions
def accumulate_dtype(dt: DataType) -> DataType:
    """Sums of bools and narrow ints accumulate in `default_int` (as torch/jax do)."""
    if dtypes.is_bool(dt) or (dtypes.is_integer(dt) and dt.priority < dtypes.default_int.priority):
        return dtypes.default_int
    return dt


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class SumOp(Op):
    dims: tuple[int, ...]
    keepdim: bool = False
    name: ClassVar[str] = "sum"

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        src = _dims(shapes[0])
        out = [1 if i in self.dims else d for i, d in enumerate(src)]
        if not self.keepdim:
            out = [d for i, d in enumerate(src) if i not in self.dims]
        return [Shape.from_(tuple(out))], [accumulate_dtype(dts[0])]

    @classmethod
    def input_dtypes(cls, dts: DTypes, **params: Any) -> DTypes:
        return [accumulate_dtype(dts[0])]


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class MaxOp(Op):
    """Max over one dim: outputs (values, indices)."""

    dim: int
    keepdim: bool = False
    name: ClassVar[str] = "max"

    @property
    def num_outputs(self) -> int:
        return 2

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        src = _dims(shapes[0])
        out = src.copy()
        if self.keepdim:
            out[self.dim] = 1
        else:
            del out[self.dim]
        shape = Shape.from_(tuple(out))
        return [shape, shape], [dts[0], dtypes.int64]


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class CumsumOp(Op):
    dim: int
    name: ClassVar[str] = "cumsum"

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [shapes[0]], [accumulate_dtype(dts[0])]

    @classmethod
    def input_dtypes(cls, dts: DTypes, **params: Any) -> DTypes:
        return [accumulate_dtype(dts[0])]


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class SortOp(Op):
    """Sort along a dim: outputs (values, indices)."""

    dim: int
    descending: bool = False
    stable: bool = False
    name: ClassVar[str] = "sort"

    @property
    def num_outputs(self) -> int:
        return 2

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        return [shapes[0], shapes[0]], [dts[0], dtypes.int64]


# ---------------------------------------------------------------- linear algebra
@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class MatMulOp(Op):
    """torch.matmul semantics (the API's squeeze quirk is applied in api)."""

    name: ClassVar[str] = "matmul"
    arity: ClassVar[int] = 2

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        a, b = _dims(shapes[0]), _dims(shapes[1])
        if not a or not b:
            raise ShapeError(f"matmul of a scalar: {shapes[0]} @ {shapes[1]}")
        a2 = [1] + a if len(a) == 1 else a
        b2 = b + [1] if len(b) == 1 else b
        if Shape.from_((a2[-1],)) != Shape.from_((b2[-2],)):
            raise ShapeError(f"matmul shapes do not fit: {shapes[0]} @ {shapes[1]}")
        batch = Shape.broadcast(Shape.from_(tuple(a2[:-2])), Shape.from_(tuple(b2[:-2])))
        out = list(batch) + ([a2[-2]] if len(a) > 1 else []) + ([b2[-1]] if len(b) > 1 else [])
        dt = dtypes.upcast(dts[0], dts[1])
        if dtypes.is_bool(dt):
            raise DTypeError("matmul of bool tensors (cast them to an int or float dtype)")
        return [Shape.from_(tuple(out))], [dt]

    @classmethod
    def input_dtypes(cls, dts: DTypes, **params: Any) -> DTypes:
        return [dtypes.upcast(dts[0], dts[1])] * 2


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class ConvOp(Op):
    """N-d convolution (input (N, C, *sp), weight (O, C/g, *k)), optionally transposed."""

    n_dims: int
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    transposed: bool = False
    output_padding: tuple[int, ...] = ()
    groups: int = 1
    name: ClassVar[str] = "conv"
    arity: ClassVar[int] = 2

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        x, w = _dims(shapes[0]), _dims(shapes[1])
        if len(x) != self.n_dims + 2 or len(w) != self.n_dims + 2:
            raise ShapeError(f"conv{self.n_dims}d of shapes {shapes[0]} and {shapes[1]}")
        out_ch = w[1] * self.groups if self.transposed else w[0]
        sp = []
        for i in range(self.n_dims):
            k, s, p, d = w[2 + i], self.stride[i], self.padding[i], self.dilation[i]
            if self.transposed:
                op = self.output_padding[i] if self.output_padding else 0
                sp.append((x[2 + i] - 1) * s - 2 * p + d * (k - 1) + op + 1)
            else:
                sp.append((x[2 + i] + 2 * p - d * (k - 1) - 1) // s + 1)
        dt = dtypes.upcast(dts[0], dts[1])
        if dtypes.is_bool(dt):
            raise DTypeError("convolution of bool tensors (cast them to an int or float dtype)")
        return [Shape.from_((x[0], out_ch, *sp))], [dt]

    @classmethod
    def input_dtypes(cls, dts: DTypes, **params: Any) -> DTypes:
        return [dtypes.upcast(dts[0], dts[1])] * 2


ALL_OPS: tuple[type[Op], ...] = (
    ConstOp, FillOp, RandOp, EvalSymbolOp, UDFSourceOp, MergeOp, IdentOp, ReshapeOp, PermuteOp,
    ExpandOp, SliceOp, PadOp, CatOp, FlipOp, IndexSelectOp, GatherOp, ScatterAddOp, IndexAddOp,
    UnaryOp, BinaryOp, WhereOp, CastOp, SumOp, MaxOp, CumsumOp, SortOp, MatMulOp, ConvOp,
    SinkUDFOp, MapUDFOp, BarrierOp, SoftmaxOp, NormOp, AttentionOp, TiledAttentionOp,
    TiledReduceOp, RegionOp,
)
"""Every primitive; each has all its rules in `tempo.prims` (tests/prims checks)."""
