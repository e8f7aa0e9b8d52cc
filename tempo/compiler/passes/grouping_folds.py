"""Static facts the lowering of a fused region needs to run a pair of members as one
backend call, recorded as tags on the region's members (`tempo.core.ops_region`):
shapes and dtypes are known here, not where the region's body is lowered, and checking
them at every call would cost more than the fold saves (a few us of Python per check on
this CPU). The SDG and every rule stay as they are: a tag only says that the pair
`matmul(x, w) + b` is a linear map with a bias row (`LINEAR_ROWS`, `LINEAR_BATCH`) or,
for a matrix `x`, plus a matrix of its output's shape (`LINEAR_ROWS`), that a mul is
tanh's gradient `g * (1 - y*y)` over operands of one shape (`TANH_GRAD`), that an add
sums two outer products of a column and a row (`OUTER_SUM`), or that an elementwise
member's value has an operand's shape and dtype, so it could be written over it
(`IN_PLACE`)."""

from __future__ import annotations

from dataclasses import replace

from tempo.compiler.passes.dedup import signature
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.op_base import Op
from tempo.core.ops_region import (
    IN_PLACE,
    IN_PLACE_BINARY,
    LINEAR_BATCH,
    LINEAR_ROWS,
    OUTER_SUM,
    TANH_GRAD,
)
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.schedule.grouping import is_basis


def tagged_body(sdg: SDG, members: list[int], body: tuple[Op, ...]) -> tuple[Op, ...]:
    """`body` (the members' ops, in order) with each member's fold tag added."""
    position = {m: k for k, m in enumerate(members)}
    out = list(body)
    for k, m in enumerate(members):
        tag = (linear_tag(sdg, m, position) or tanh_grad_tag(sdg, m, position)
               or outer_sum_tag(sdg, m, position))
        tags = {t for t in (tag, in_place_tag(sdg, m)) if t is not None}
        if tags:
            out[k] = replace(out[k], tags=out[k].tags | tags)
    return tuple(out)


def in_place_tag(sdg: SDG, op_id: int) -> str | None:
    """IN_PLACE + the sides (of "0", "1", "01") whose read has op `op_id`'s static output
    shape and dtype, when the op is a unary or a binary of IN_PLACE_BINARY; else None.
    (Whether the operand is a fresh value read by this member alone is the lowering's
    call: it sees the region's wiring and which members allocate.)"""
    op = sdg.ops[op_id]
    if not (isinstance(op, ops.UnaryOp)
            or (isinstance(op, ops.BinaryOp) and op.fn in IN_PLACE_BINARY)):
        return None
    info = sdg.tensors[TensorId(op_id, 0)]
    try:
        out = tuple(info.shape.evaluate(sdg.bound_defs))
    except KeyError:
        return None
    if info.shape.vars_used() or not all(isinstance(d, int) for d in out):
        return None
    sides = "".join(str(k) for k, e in enumerate(_inputs(sdg, op_id))
                    if _static(sdg, e) == out and sdg.tensors[e.src].dtype == info.dtype)
    return f"{IN_PLACE}{sides}" if sides else None


def _static(sdg: SDG, e: Edge) -> tuple[int, ...] | None:
    shape = sdg.read_shape(e)
    if shape.vars_used():
        return None
    try:
        dims = tuple(shape.evaluate(sdg.bound_defs))
    except KeyError:
        return None
    return dims if all(isinstance(d, int) for d in dims) else None


def linear_tag(sdg: SDG, add: int, position: dict[int, int]) -> str | None:
    """LINEAR_ROWS / LINEAR_BATCH when op `add` is `matmul(x, w) + b` (either order) with a
    matmul of the same region read at the same point, `w` (K, N), `b` (N,), `x` (..., K)
    of rank >= 2, one float dtype for all; LINEAR_ROWS also for `x` (M, K) and `b` (M, N),
    a residual added to a projection (the GPT-2 core's `x + a @ W_O`): addmm adds any
    (M, N) matrix; else None."""
    op = sdg.ops[add]
    if not (isinstance(op, ops.BinaryOp) and op.fn == "add"):
        return None
    ins = sorted(sdg.in_edges[add], key=lambda e: e.sink_in)
    if len(ins) != 2:
        return None
    for side in (0, 1):
        e, bias = ins[side], ins[1 - side]
        mm = sdg.ops[e.src.op_id]
        if (not isinstance(mm, ops.MatMulOp) or e.src.op_id not in position
                or not is_basis(e, sdg)):
            continue
        x_e, w_e = sorted(sdg.in_edges[mm.op_id], key=lambda e: e.sink_in)
        x, w, b = _static(sdg, x_e), _static(sdg, w_e), _static(sdg, bias)
        types = {sdg.tensors[t.src].dtype for t in (x_e, w_e, bias)}
        if (x is None or w is None or b is None or len(w) != 2 or len(x) < 2
                or len(types) != 1 or not dtypes.is_float(types.pop())):
            continue
        if b == (w[1],):
            return LINEAR_ROWS if len(x) == 2 else LINEAR_BATCH
        if len(x) == 2 and b == (x[0], w[1]):  # a residual: addmm's input is any (M, N)
            return LINEAR_ROWS
    return None


def _inputs(sdg: SDG, op_id: int) -> list[Edge]:
    return sorted(sdg.in_edges[op_id], key=lambda e: e.sink_in)


def _member_producer(sdg: SDG, e: Edge, position: dict[int, int], cls: type,
                     fn: str) -> int | None:
    """The producer of `e` when it is a `cls` with `fn` in the region, read at the same
    point; else None."""
    src = sdg.ops[e.src.op_id]
    if (e.src.op_id not in position or e.src.output_id != 0 or e.cond is not None
            or not isinstance(src, cls) or getattr(src, "fn", None) != fn
            or not is_basis(e, sdg)):
        return None
    return src.op_id


def _same_value(sdg: SDG, a: Edge, b: Edge) -> bool:
    """`a` and `b` read the same values: the same tensor at the same index, or the same
    point of two pure ops of one kind and parameters reading the same (what dedup would
    merge: the gradient rule records `y * y` from two reads of `y`, which later passes can
    turn into two equal permutes)."""
    if a.cond is not None or b.cond is not None or a.expr != b.expr:
        return False
    if a.src == b.src:
        return True
    pa, pb = sdg.ops[a.src.op_id], sdg.ops[b.src.op_id]
    return (a.src.output_id == b.src.output_id and isinstance(pa, (ops.PermuteOp, ops.ReshapeOp))
            and signature(sdg, pa) == signature(sdg, pb))


def tanh_grad_tag(sdg: SDG, mul: int, position: dict[int, int]) -> str | None:
    """TANH_GRAD when op `mul` is `g * (1 - y*y)` (either order, `g` not itself a sub of
    the region) with the sub and the square members of the region read at the same point,
    `1` a scalar constant 1, the square's two operands the same value (`_same_value`), `g`
    and `y` of one static shape and float dtype; else None."""
    op = sdg.ops[mul]
    if not (isinstance(op, ops.BinaryOp) and op.fn == "mul"):
        return None
    ins = _inputs(sdg, mul)
    if len(ins) != 2:
        return None
    subs = [_member_producer(sdg, e, position, ops.BinaryOp, "sub") for e in ins]
    if None not in subs:  # the lowering could not tell which side is 1 - y*y
        return None
    for side, sub in enumerate(subs):
        if sub is None:
            continue
        one, sq = _inputs(sdg, sub)
        const = sdg.ops[one.src.op_id]
        square = _member_producer(sdg, sq, position, ops.BinaryOp, "mul")
        if (square is None or not isinstance(const, ops.ConstOp) or const.value.shape != ()
                or float(const.value) != 1.0):
            continue
        p, q = _inputs(sdg, square)
        g = ins[1 - side]
        shapes = {_static(sdg, e) for e in (g, p)}
        types = {sdg.tensors[e.src].dtype for e in (g, p, one)}
        if (not _same_value(sdg, p, q) or len(shapes) != 1 or None in shapes
                or len(types) != 1 or not dtypes.is_float(types.pop())):
            continue
        return TANH_GRAD
    return None


def outer_sum_tag(sdg: SDG, add: int, position: dict[int, int]) -> str | None:
    """OUTER_SUM + the columns' sides when op `add` is `a * u + b * v` with both muls
    members of the region read at the same point, `a`, `b` columns (..., M, 1) of one
    static shape, `u`, `v` rows (1, N) or (N,) of one static shape, one float dtype; else
    None."""
    op = sdg.ops[add]
    if not (isinstance(op, ops.BinaryOp) and op.fn == "add"):
        return None
    ins = _inputs(sdg, add)
    if len(ins) != 2:
        return None
    sides, cols, rows, types = [], set(), set(), set()
    for e in ins:
        mul = _member_producer(sdg, e, position, ops.BinaryOp, "mul")
        if mul is None:
            return None
        pair = _inputs(sdg, mul)
        shapes = [_static(sdg, f) for f in pair]
        side = next((s for s in (0, 1) if _column_and_row(shapes[s], shapes[1 - s])), None)
        if side is None:
            return None
        sides.append(side)
        cols.add(shapes[side])
        rows.add(shapes[1 - side])
        types |= {sdg.tensors[f.src].dtype for f in pair}
    if len(cols) != 1 or len(rows) != 1 or len(types) != 1 or not dtypes.is_float(types.pop()):
        return None
    return f"{OUTER_SUM}{sides[0]}{sides[1]}"


def _column_and_row(col: tuple[int, ...] | None, row: tuple[int, ...] | None) -> bool:
    """`col` is (..., M, 1) and `row` (1, N) or (N,) (their product (..., M, N))."""
    return (col is not None and row is not None and len(col) >= 2 and col[-1] == 1
            and (len(row) == 1 or (len(row) == 2 and row[0] == 1)))
