"""Batching (vectorisation) rules, one per primitive op class: how an op that ran once per
point of a dimension `d` runs once over all `D` points, with `d` as a new leading spatial
dim of its batched inputs and of its outputs (ARCHITECTURE §5.3).

A rule receives the op, which inputs are batched (their source iterates over `d`, so the
input now carries the leading `D` dim) and the per-point input shapes, and returns the
batched op (same class, adjusted parameters, domain still to be set) and, per input, the
shape a batched input must be reshaped to first (`None`: as it is) — e.g. an elementwise
operand of lower rank gets unit dims after `D` so that broadcasting aligns it as before.
A rule returns None when it has no exact batched form for that case (the op then keeps
its loop over `d`). `batch_op` checks every rule's result with the op's own shape rule:
the batched op must give `(D, *shape)` for each per-point output `shape`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from tempo.core import ops
from tempo.core.dtype import DataType, dtypes
from tempo.core.index_expr import Symbol
from tempo.core.shape import Shape


@dataclass(frozen=True)
class Batching:
    """The batched form of one op: the op and, per input, a reshape target or None
    (`expand`: unbatched inputs are broadcast to `(D, *shape)` first, for ops that need
    every input batched, such as recurrences)."""

    op: ops.Op
    reshapes: tuple[Shape | None, ...]
    expand: bool = False


# A rule: (op, batched inputs, per-point input shapes, D, vectorised dim name) -> Batching
Rule = Callable[[Any, list[bool], list[Shape], int, str], "Batching | None"]
RULES: dict[type[ops.Op], Rule] = {}


def rule(*classes: type[ops.Op]) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for c in classes:
            RULES[c] = fn
        return fn
    return register


def _lead(D: int, shape: Shape, rank: int) -> Shape:
    """`(D, 1, ..., 1, *shape)` of rank `rank + 1`: a batched operand aligned for
    right-aligned broadcasting against operands of rank `rank`."""
    return Shape.from_((D, *([1] * (rank - len(shape))), *shape))


def _same(op: ops.Op, n: int) -> Batching:
    return Batching(op, (None,) * n)


# ---------------------------------------------------------------- elementwise
@rule(ops.UnaryOp, ops.CastOp, ops.IdentOp, ops.BinaryOp, ops.WhereOp)
def _elementwise(op: ops.Op, batched: list[bool], shapes: list[Shape], D: int,
                 d: str) -> Batching | None:
    """Operands broadcast as before once each batched one has the output's rank after D;
    unbatched operands broadcast along D (right-aligned)."""
    rank = max(len(s) for s in shapes)
    return Batching(op, tuple(_lead(D, s, rank) if b and len(s) < rank else None
                              for s, b in zip(shapes, batched)))


# ---------------------------------------------------------------- linear algebra
@rule(ops.MatMulOp)
def _matmul(op: ops.MatMulOp, batched: list[bool], shapes: list[Shape], D: int,
            d: str) -> Batching | None:
    """D joins the matmul batch dims. A batched vector stays a vector only as the left
    operand of an unbatched matrix or vector ((D, K) @ (K, N) is D vector-matrix
    products); any other batched vector has no batched matmul form without a squeeze."""
    (a, b), (ba, bb) = shapes, batched
    if (bb and len(b) == 1) or (ba and len(a) == 1 and (bb or len(b) > 2)):
        return None
    batch = max(len(a), len(b))
    reshapes: list[Shape | None] = []
    for s, flag in ((a, ba), (b, bb)):
        reshapes.append(_lead(D, s, batch) if flag and len(s) >= 2 and len(s) < batch else None)
    return Batching(op, tuple(reshapes))


# ---------------------------------------------------------------- one input, dims shift
@rule(ops.SumOp)
def _sum(op: ops.SumOp, batched: list[bool], shapes: list[Shape], D: int,
         d: str) -> Batching | None:
    return _same(replace(op, dims=tuple(x + 1 for x in op.dims)), 1) if batched[0] else None


@rule(ops.MaxOp, ops.CumsumOp, ops.SortOp, ops.SliceOp)
def _one_dim(op: Any, batched: list[bool], shapes: list[Shape], D: int,
             d: str) -> Batching | None:
    return _same(replace(op, dim=op.dim + 1), 1) if batched[0] else None


@rule(ops.FlipOp)
def _flip(op: ops.FlipOp, batched: list[bool], shapes: list[Shape], D: int,
          d: str) -> Batching | None:
    return _same(replace(op, dims=tuple(x + 1 for x in op.dims)), 1) if batched[0] else None


@rule(ops.PermuteOp)
def _permute(op: ops.PermuteOp, batched: list[bool], shapes: list[Shape], D: int,
             d: str) -> Batching | None:
    if not batched[0]:
        return None
    return _same(replace(op, dims=(0, *(x + 1 for x in op.dims))), 1)


@rule(ops.ReshapeOp)
def _reshape(op: ops.ReshapeOp, batched: list[bool], shapes: list[Shape], D: int,
             d: str) -> Batching | None:
    return _same(replace(op, shape=op.shape.prepend_dim(D)), 1) if batched[0] else None


@rule(ops.ExpandOp)
def _expand(op: ops.ExpandOp, batched: list[bool], shapes: list[Shape], D: int,
            d: str) -> Batching | None:
    if not batched[0]:
        return None
    src, rank = shapes[0], len(op.shape)
    pre = _lead(D, src, rank) if len(src) < rank else None
    return Batching(replace(op, shape=op.shape.prepend_dim(D)), (pre,))


@rule(ops.PadOp)
def _pad(op: ops.PadOp, batched: list[bool], shapes: list[Shape], D: int,
         d: str) -> Batching | None:
    if not batched[0]:
        return None
    return _same(replace(op, padding=((0, 0), *op.padding)), 1)


@rule(ops.CatOp)
def _cat(op: ops.CatOp, batched: list[bool], shapes: list[Shape], D: int,
         d: str) -> Batching | None:
    if not all(batched):
        return None  # an unbatched piece would need copying D times
    return _same(replace(op, dim=op.dim + 1), len(shapes))


@rule(ops.IndexSelectOp)
def _index_select(op: ops.IndexSelectOp, batched: list[bool], shapes: list[Shape], D: int,
                  d: str) -> Batching | None:
    if not batched[0] or batched[1]:
        return None  # a batched index is a gather, not an index_select
    return _same(replace(op, dim=op.dim + 1), 2)


@rule(ops.GatherOp, ops.ScatterAddOp)
def _gather(op: Any, batched: list[bool], shapes: list[Shape], D: int,
            d: str) -> Batching | None:
    return _same(replace(op, dim=op.dim + 1), len(shapes)) if all(batched) else None


@rule(ops.IndexAddOp)
def _index_add(op: ops.IndexAddOp, batched: list[bool], shapes: list[Shape], D: int,
               d: str) -> Batching | None:
    if not (batched[0] and batched[2]) or batched[1]:
        return None
    return _same(replace(op, dim=op.dim + 1), 3)


# ---------------------------------------------------------------- sources and recurrences
@rule(ops.RandOp)
def _rand(op: ops.RandOp, batched: list[bool], shapes: list[Shape], D: int,
          d: str) -> Batching | None:
    """D independent draws in one call: the same distribution, another stream order."""
    return _same(replace(op, shape=op.shape.prepend_dim(D)), 0)


@rule(ops.UDFSourceOp)
def _udf_source(op: ops.UDFSourceOp, batched: list[bool], shapes: list[Shape], D: int,
                d: str) -> Batching | None:
    """Only with the user's vectorised version (`lazy_vectorized_version`), asked for the
    dimension and its size; without one (or when it returns None for this dimension)
    the UDF keeps its loop. A source is batched over one dimension at most."""
    if op.lazy_vectorized_version is None or not op.with_ts:
        return None
    dim = next(v for v in op.domain.variables if v.name == d)
    fn = op.lazy_vectorized_version(dim, D)
    if fn is None:
        return None
    return _same(replace(op, fn=fn, shape=op.shape.prepend_dim(D),
                         lazy_vectorized_version=None), 0)


@rule(ops.EvalSymbolOp)
def _eval_symbol(op: ops.EvalSymbolOp, batched: list[bool], shapes: list[Shape], D: int,
                 d: str) -> Batching | None:
    """The values of `d` itself, all at once: the constant `0, 1, ..., D-1`."""
    sym = op.symbol
    if not (isinstance(sym, Symbol) and sym.name == d and len(op.domain) == 1):
        return None
    value = np.arange(D).astype(dtypes.to_np(op.dtype))
    return _same(ops.ConstOp(op_id=op.op_id, domain=op.domain, value=value, dtype=op.dtype,
                             site=op.site), 0)


@rule(ops.MergeOp)
def _merge(op: ops.MergeOp, batched: list[bool], shapes: list[Shape], D: int,
           d: str) -> Batching | None:
    """Every branch is read with D (branches without it are broadcast to it)."""
    return Batching(replace(op, shape=op.shape.prepend_dim(D)), (None,) * len(shapes),
                    expand=True)


_SOURCES = (ops.RandOp, ops.UDFSourceOp, ops.EvalSymbolOp)


def batch_op(op: ops.Op, batched: list[bool], shapes: list[Shape], dts: list[DataType],
             D: int, d: str, out_shapes: list[Shape]) -> Batching | None:
    """The checked batched form of `op` (None if it has none): its shape rule must give
    `(D, *s)` for every per-point output shape `s`."""
    fn = RULES.get(type(op))
    if fn is None or (not any(batched) and not isinstance(op, _SOURCES)):
        return None  # an op that does not vary along d has nothing to batch
    got = fn(op, batched, shapes, D, d)
    if got is None:
        return None
    ins = [(r if r is not None else (s.prepend_dim(D) if b or got.expand else s))
           for s, b, r in zip(shapes, batched, got.reshapes)]
    try:
        outs, _ = got.op.infer(ins, dts)
    except Exception:  # noqa: BLE001 - a shape rule refusing the batched shapes: no batching
        return None
    if len(outs) != len(out_shapes) or any(
            o != s.prepend_dim(D) for o, s in zip(outs, out_shapes)):
        return None
    return got
