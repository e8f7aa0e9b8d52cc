"""Domain reduction: an op whose value does not vary along a dimension of its domain
loses that dimension, so it runs once instead of once per point of it (weight transposes
inside a time loop run once per iteration, constants once per program), and the
scheduler sees a smaller domain and fewer dependences.

An op varies along `v` when it reads anything at an index (or under a condition) that
mentions `v`, when its kernel receives `v` (symbol values, symbolic shapes), or when it
is not a function of its reads (random draws, user functions, sinks). Readers drop the
matching member of their reads; a reader that slices along `v` (it wants the copies)
keeps the op as it is."""

from __future__ import annotations

from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.index_expr import Slice
from tempo.core.sdg import SDG

_NOT_A_FUNCTION_OF_READS = (ops.RandOp, ops.UDFSourceOp, ops.SinkUDFOp, ops.MapUDFOp,
                            ops.BarrierOp)


def varying_vars(sdg: SDG, op: ops.Op) -> set[str] | None:
    """Names of the domain variables the op's value (or effect) may vary along; None when
    it may vary along all of them (not a function of its reads)."""
    if isinstance(op, _NOT_A_FUNCTION_OF_READS) or getattr(op, "with_ts", False):
        return None
    used: set[str] = set()
    for x in op.runtime_exprs():
        if not isinstance(x, int):
            used |= {s.name for s in x.vars_used()}
    if not op.domain.has_default_bounds():
        for w in op.domain.variables:  # a bound over another variable ties the two
            bound = op.domain.bound_of(w)
            if not isinstance(bound, int):
                used |= {s.name for s in bound.vars_used()}
    for e in sdg.in_edges[op.op_id]:
        used |= e.var_names
    return used


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    for op in sdg.topological():
        reduce_op(sdg, op)
    return sdg


def reduce_op(sdg: SDG, op: ops.Op) -> None:
    """Drop from `op`'s domain every dimension its value does not vary along (passes that
    add ops after the clean-up call it on them)."""
    if not len(op.domain) or sdg.is_kept(op.op_id):
        return  # the user reads kept tensors by their full domain
    varying = varying_vars(sdg, op)
    if varying is None:
        return
    for v in [v for v in op.domain.variables if v.name not in varying]:
        pos = sdg.ops[op.op_id].domain.find_variable_index(v)
        if any(isinstance(e.expr[pos], Slice) for e in sdg.out_edges.get(op.op_id, [])):
            continue
        sdg.reduce_domain(op.op_id, v)
