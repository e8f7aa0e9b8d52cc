"""Broadcast elimination: an elementwise op (binary, where) broadcasts its operands
itself, so an explicit `expand` (or a reshape that only adds leading 1-dims) feeding it
is redundant when the op's output shape stays the same without it. The reader then reads
the smaller tensor, and the expand is left to dead-code elimination."""

from __future__ import annotations

from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.sdg_compose import compose
from tempo.core.shape import Shape

_BROADCASTING = (ops.BinaryOp, ops.WhereOp)


def _only_adds_unit_dims(sdg: SDG, op: ops.Op) -> bool:
    if isinstance(op, ops.ExpandOp):
        return True
    if not isinstance(op, ops.ReshapeOp):
        return False
    src = sdg.read_shape(sdg.in_edges[op.op_id][0])
    dst = sdg.tensors[TensorId(op.op_id, 0)].shape
    if not (src.is_static() and dst.is_static()) or len(dst) < len(src):
        return False
    lead = len(dst) - len(src)
    return all(d == 1 for d in tuple(dst)[:lead]) and tuple(dst)[lead:] == tuple(src)


def _bypass(sdg: SDG, reader: ops.Op, e: Edge) -> bool:
    """Make `e` (an input of an elementwise reader) skip the broadcasting op it reads."""
    mid = sdg.ops[e.src.op_id]
    (inner,) = sdg.in_edges[mid.op_id]
    if e.cond is not None or inner.cond is not None or not e.is_point():
        return False
    expr = compose(inner.expr, mid.domain.variables, e.expr)
    if expr is None or not expr.is_point():
        return False
    shapes = [sdg.read_shape(x) for x in sdg.in_edges[reader.op_id]]
    shapes[e.sink_in] = sdg.read_shape(Edge(reader.op_id, e.sink_in, inner.src, expr))
    if not all(s.is_static() for s in shapes):
        return False
    out = sdg.tensors[TensorId(reader.op_id, 0)].shape
    if tuple(Shape.broadcast(*shapes)) != tuple(out):
        return False
    sdg.set_input(e, inner.src, expr)
    return True


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    for op in list(sdg.topological()):
        if not isinstance(op, _BROADCASTING):
            continue
        for e in list(sdg.in_edges[op.op_id]):
            if _only_adds_unit_dims(sdg, sdg.ops[e.src.op_id]):
                _bypass(sdg, op, e)
    return sdg
