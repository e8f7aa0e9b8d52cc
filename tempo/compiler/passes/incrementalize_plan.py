"""The plan of the incrementalisation pass (ARCHITECTURE §5.5): which ops compute a large
tensor block by block, along which of their spatial dims, and where the blocks end.

Seeded by a tensor above the memory threshold and a spatial dim `d` of it, a *region*
grows through ops that compute row `r` of their output along the split dim from row `r`
of their inputs along a matching dim (elementwise ops, matmul's batch and row dims,
sums over other dims) — so each op can run on one block of rows at a time:

- an input outside the region whose matching dim exists is a *leaf*: each block reads
  its rows (a slice);
- an input without the dim (a weight, a broadcast operand) is read whole by every block;
- a reader outside the region that sums over the split dim is an *exit*: each block sums
  its rows and the exit sums the per-block results; a matmul contracting the rows (the
  weight gradient `x^T @ g` of a batch) is one too, its other operand sliced per block;
- any other outside reader of a region op (a merge, a sink, the user's kept tensors,
  ops of other domains) reads the blocks put back together (a *concat exit*) — correct,
  but that tensor is whole again, so the seed itself may not need one.

Only ops over the seed's domain, with static shapes and point-to-point reads of each
other, join: the rewrite then only adds the block dimension to their domains.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np

from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import Shape

# Ops that compute rows from rows (with their dim rule below); everything else stops a region.
_ROWWISE = (ops.UnaryOp, ops.BinaryOp, ops.WhereOp, ops.CastOp, ops.IdentOp, ops.MatMulOp,
            ops.SumOp, ops.ReshapeOp, ops.PermuteOp, ops.ExpandOp)


@dataclass
class Region:
    """One incrementalisation: ops -> their split dim, leaf reads -> the dim sliced,
    exits (sums over the split dim), and region ops read whole by outside readers."""

    seed: TensorId
    rows: int                       # size of the split dim (the same for every op)
    dims: dict[int, int] = field(default_factory=dict)
    leaves: dict[Edge, int] = field(default_factory=dict)
    exits: set[int] = field(default_factory=set)   # sums and matmuls over the rows
    concat: dict[int, list[Edge]] = field(default_factory=dict)


def shape_of(sdg: SDG, e: Edge) -> tuple[int, ...] | None:
    s = sdg.read_shape(e)
    return tuple(s.as_static()) if s.is_static() else None


def input_dims(sdg: SDG, op: ops.Op, d: int) -> list[int | None] | None:
    """For output dim `d` of `op`: the dim of each input (as read) holding the same rows,
    None where the input is broadcast along it; None when `op` has no such rule."""
    if not isinstance(op, _ROWWISE):
        return None
    ins = sdg.in_edges[op.op_id]
    shapes = [shape_of(sdg, e) for e in ins]
    out = sdg.tensors.get(TensorId(op.op_id, 0))
    if any(s is None for s in shapes) or out is None or not out.shape.is_static():
        return None
    oshape = tuple(out.shape.as_static())
    known = cast(list[tuple[int, ...]], shapes)  # none is None (checked above)
    if isinstance(op, ops.MatMulOp):
        return _matmul_dims(known[0], known[1], oshape, d)
    if isinstance(op, ops.PermuteOp):
        return [op.dims[d]]
    if isinstance(op, ops.ReshapeOp):
        j = _reshaped_dim(known[0], oshape, d)
        return None if j is None else [j]
    if isinstance(op, ops.SumOp):
        src = shapes[0]
        assert src is not None
        kept = [i for i in range(len(src)) if i not in op.dims]
        j = d if op.keepdim else kept[d]
        return None if j in op.dims else [j]
    res: list[int | None] = []
    for s in shapes:  # elementwise, broadcast right-aligned
        assert s is not None
        j = d - (len(oshape) - len(s))
        res.append(j if j >= 0 and s[j] == oshape[d] else None)
    return res


def _reshaped_dim(src: tuple[int, ...], out: tuple[int, ...], d: int) -> int | None:
    """The input dim of a reshape whose rows are output dim `d`'s: the same size after
    the same number of elements (row-major), so a block of rows reshapes on its own."""
    before = int(np.prod(out[:d]))
    for j, n in enumerate(src):
        if n == out[d] and int(np.prod(src[:j])) == before:
            return j
    return None


def _matmul_dims(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...],
                 d: int) -> list[int | None] | None:
    if len(a) < 2 or len(b) < 2:
        return None
    nb = len(out) - 2
    if d == nb:          # rows of a
        return [len(a) - 2, None]
    if d == nb + 1:      # columns of b
        return [None, len(b) - 1]
    res: list[int | None] = []
    for s in (a, b):     # a batch dim, broadcast right-aligned
        j = d - (nb - (len(s) - 2))
        res.append(j if j >= 0 and s[j] == out[d] else None)
    return res


def output_dim(sdg: SDG, op: ops.Op, pos: int, j: int) -> int | None:
    """The output dim of `op` holding the rows of dim `j` of its input `pos`, if one does
    (and every other input agrees on where those rows are)."""
    out = sdg.tensors.get(TensorId(op.op_id, 0))
    if out is None or not out.shape.is_static():
        return None
    for d in range(len(out.shape)):
        dims = input_dims(sdg, op, d)
        if dims is not None and dims[pos] == j:
            return d
    return None


def _point_to_point(sdg: SDG, e: Edge) -> bool:
    """`e` reads its source at the reader's own point (same domain, identity, no cond)."""
    src, sink = sdg.ops[e.src.op_id], sdg.ops[e.sink]
    return (e.cond is None and _names(src) == _names(sink)
            and e.expr.struct_eq(sink.domain.basis_expr))


def _names(op: ops.Op) -> tuple[str, ...]:
    return tuple(v.name for v in op.domain.variables)


def may_join(sdg: SDG, op: ops.Op, frozen: frozenset[str]) -> bool:
    """A row-wise op with one static output the user does not keep, over no dimension in
    `frozen` (blocks made by an earlier region are not split again)."""
    out = sdg.tensors.get(TensorId(op.op_id, 0))
    return (isinstance(op, _ROWWISE) and op.num_outputs == 1 and out is not None
            and out.shape.is_static() and not sdg.is_kept(op.op_id)
            and not frozen & set(_names(op)))


def grow(sdg: SDG, seed: TensorId, d: int, frozen: frozenset[str]) -> Region | None:
    """The region seeded by dim `d` of `seed`, or None when it would not keep the seed's
    tensor in blocks (the seed cannot join, or an outside reader needs it whole) or its
    reads cannot be split consistently."""
    op = sdg.ops[seed.op_id]
    if not may_join(sdg, op, frozen) or input_dims(sdg, op, d) is None:
        return None
    reg = Region(seed, _rows(sdg, seed.op_id, d), {op.op_id: d})
    if reg.rows < 2:
        return None
    todo = [op.op_id]
    while todo:
        i = todo.pop()
        _join_readers(sdg, reg, i, todo, frozen)
        _join_inputs(sdg, reg, i, todo, frozen)
    if not _settle(sdg, reg) or seed.op_id in reg.concat:
        return None
    return reg


def _join_readers(sdg: SDG, reg: Region, i: int, todo: list[int],
                  frozen: frozenset[str]) -> None:
    """Readers of op `i` that sum over its rows become exits; row-wise ones join."""
    d = reg.dims[i]
    for e in sdg.out_edges.get(i, []):
        sink = sdg.ops[e.sink]
        if e.sink in reg.dims or e.sink in reg.exits or not _point_to_point(sdg, e):
            continue
        if reduces_rows(sdg, sink, e.sink_in, d):
            reg.exits.add(e.sink)
            continue
        if not may_join(sdg, sink, frozen):
            continue
        j = output_dim(sdg, sink, e.sink_in, d)
        if j is not None and _rows(sdg, e.sink, j) == reg.rows:
            reg.dims[e.sink] = j
            todo.append(e.sink)


def _join_inputs(sdg: SDG, reg: Region, i: int, todo: list[int],
                 frozen: frozenset[str]) -> None:
    """Producers whose rows op `i` reads join when every reader of theirs can compute
    from blocks too (else the producer stays whole, and the blocks slice it)."""
    dims = input_dims(sdg, sdg.ops[i], reg.dims[i])
    assert dims is not None
    for e, j in zip(sdg.in_edges[i], dims):
        p = e.src.op_id
        if j is None or p in reg.dims or p in reg.exits or not _point_to_point(sdg, e):
            continue
        if may_join(sdg, sdg.ops[p], frozen) and input_dims(sdg, sdg.ops[p], j) is not None \
                and all(_blockwise_reader(sdg, reg, r, j, frozen)
                        for r in sdg.out_edges.get(p, [])):
            reg.dims[p] = j
            todo.append(p)


def _blockwise_reader(sdg: SDG, reg: Region, e: Edge, j: int, frozen: frozenset[str]) -> bool:
    """Whether reader `e` of rows along dim `j` is in the region, or can join or exit it."""
    if e.sink in reg.dims:
        return True
    sink = sdg.ops[e.sink]
    if not _point_to_point(sdg, e):
        return False
    if reduces_rows(sdg, sink, e.sink_in, j):
        return True
    return may_join(sdg, sink, frozen) and output_dim(sdg, sink, e.sink_in, j) is not None


def _settle(sdg: SDG, reg: Region) -> bool:
    """Leaves and concat exits once the region's ops are known; False when two region
    ops disagree on where rows are (a region op read whole, or along another dim, by
    another region op) or a leaf read is conditional."""
    for i, d in reg.dims.items():
        dims = input_dims(sdg, sdg.ops[i], d)
        assert dims is not None
        for e, j in zip(sdg.in_edges[i], dims):
            if e.src.op_id in reg.dims:
                if j != reg.dims[e.src.op_id] or not _point_to_point(sdg, e):
                    return False
            elif j is not None:
                if e.cond is not None:
                    return False
                reg.leaves[e] = j
        for e in sdg.out_edges.get(i, []):
            if e.sink not in reg.dims and e.sink not in reg.exits:
                reg.concat.setdefault(i, []).append(e)
    for x in reg.exits:  # every operand holds the rows where the exit reduces them
        for e in sdg.in_edges[x]:
            if e.src.op_id in reg.dims:
                if not (reduces_rows(sdg, sdg.ops[x], e.sink_in, reg.dims[e.src.op_id])
                        and _point_to_point(sdg, e)):
                    return False
                continue
            j = contracted_dim(sdg, sdg.ops[x], e.sink_in)
            if j is None or e.cond is not None or _dim_size(sdg, e, j) != reg.rows:
                return False
            else:
                reg.leaves[e] = j
    return True


def contracted_dim(sdg: SDG, op: ops.Op, pos: int) -> int | None:
    """The dim of input `pos` a matmul contracts (float matmuls of 2-D or more only: the
    blocks' partial products are summed, which ints would widen)."""
    if not isinstance(op, ops.MatMulOp):
        return None
    shapes = [shape_of(sdg, e) for e in sdg.in_edges[op.op_id]]
    out = sdg.tensors[TensorId(op.op_id, 0)]
    if any(s is None or len(s) < 2 for s in shapes) or not dtypes.is_float(out.dtype):
        return None
    s = shapes[pos]
    assert s is not None
    return len(s) - 1 if pos == 0 else len(s) - 2


def reduces_rows(sdg: SDG, op: ops.Op, pos: int, j: int) -> bool:
    """Whether `op` sums its input `pos` over dim `j` (a sum over it, or a matmul
    contracting it): the op can add up per-block results."""
    if isinstance(op, ops.SumOp):
        return j in op.dims
    return contracted_dim(sdg, op, pos) == j


def _dim_size(sdg: SDG, e: Edge, j: int) -> int | None:
    s = shape_of(sdg, e)
    return None if s is None else s[j]


def _rows(sdg: SDG, op_id: int, d: int) -> int:
    return int(sdg.tensors[TensorId(op_id, 0)].shape.as_static()[d])


def with_rows(op: ops.Op, d: int, n: int) -> ops.Op:
    """`op` computing `n` rows along its output dim `d` (ops naming a shape are resized)."""
    if isinstance(op, ops.ReshapeOp | ops.ExpandOp):
        return replace(op, shape=shape_with(op.shape, d, n))
    return op


def shape_with(shape: Shape, d: int, n: int) -> Shape:
    """`shape` with dim `d` of size `n` (a block of rows)."""
    dims = list(shape.as_static())
    dims[d] = n
    return Shape.from_(tuple(dims))
