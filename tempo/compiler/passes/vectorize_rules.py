"""Batching (vectorisation) rules: the form they take and the check the pass applies.

Each primitive registers its batching rule with its other rules (`tempo.prims`, through
`tempo.compiler.op_rules`): how an op that ran once per point of a dimension `d` runs once
over all `D` points, with `d` as a new leading spatial dim of its batched inputs and of its
outputs (ARCHITECTURE §5.3). A rule is called as `rule(op, batched, shapes, D, d)` —
which inputs are batched (their source iterates over `d`, so the input now carries the
leading `D` dim), the per-point input shapes, the size and the name of the dim — and
returns a `Batching`: the batched op (same class, adjusted parameters, domain set by the
pass) and, per input, the shape a batched input is reshaped to first (`None`: as it is) —
e.g. an elementwise operand of lower rank gets unit dims after `D` so that broadcasting
aligns it as before. A rule returns None when it has no exact batched form for that case,
and an op registered with `NO_BATCHING` has none at all: the op keeps its loop over `d`.
`batch_op` checks every rule's result with the op's own shape rule: the batched op must
give `(D, *shape)` for each per-point output `shape`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tempo.compiler.op_rules import batching_rule
from tempo.core import ops
from tempo.core.dtype import DataType
from tempo.core.shape import Shape


@dataclass(frozen=True)
class Batching:
    """The batched form of one op: the op and, per input, a reshape target or None
    (`expand`: unbatched inputs are broadcast to `(D, *shape)` first, for ops that need
    every input batched, such as recurrences).

    The batched op runs at all `D` points, where the loop may run the op at some only
    (the branch of a recurrence taken at `t < P`): `addresses` are the batched inputs
    that address another input (an index: out of range at a point the loop never ran,
    the kernel fails or, on jax, clamps), which the pass masks to 0 at such points;
    `exact_points` marks an op that must run at exactly the loop's points (a user
    function, which may fail or act elsewhere), batched only where that is all of `d`."""

    op: ops.Op
    reshapes: tuple[Shape | None, ...]
    expand: bool = False
    addresses: tuple[int, ...] = ()
    exact_points: bool = False


def lead(D: int, shape: Shape, rank: int) -> Shape:
    """`(D, 1, ..., 1, *shape)` of rank `rank + 1`: a batched operand aligned for
    right-aligned broadcasting against operands of rank `rank`."""
    return Shape.from_((D, *([1] * (rank - len(shape))), *shape))


def same(op: ops.Op, n: int) -> Batching:
    """`op` (with its parameters) over `n` inputs taken as they are."""
    return Batching(op, (None,) * n)


_SOURCES = (ops.RandOp, ops.UDFSourceOp, ops.EvalSymbolOp, ops.ConstOp, ops.FillOp)


def batch_op(op: ops.Op, batched: list[bool], shapes: list[Shape], dts: list[DataType],
             D: int, d: str, out_shapes: list[Shape]) -> Batching | None:
    """The checked batched form of `op` (None if it has none): its shape rule must give
    `(D, *s)` for every per-point output shape `s`."""
    fn = batching_rule(type(op))
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
