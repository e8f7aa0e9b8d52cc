"""Sum of a cat along a summed dim: `sum(cat(a, b, dim=d), dims ∋ d)` is
`sum(a, dims) + sum(b, dims)`, so the concatenated copy is never built. Exact only where
addition is associative: integer and bool sums (float sums keep their order)."""

from __future__ import annotations

from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.sdg import SDG, TensorId
from tempo.core.sdg_compose import compose


def sum_of_cat(sdg: SDG, op: ops.SumOp) -> bool:
    (e,) = sdg.in_edges[op.op_id]
    cat = sdg.ops[e.src.op_id]
    if not isinstance(cat, ops.CatOp) or not e.is_point() or e.cond is not None:
        return False
    if dtypes.is_float(sdg.tensors[e.src].dtype) or sdg.is_kept(cat.op_id):
        return False
    if len(sdg.readers(e.src)) != 1:
        return False  # the cat is needed anyway
    rank = len(sdg.tensors[e.src].shape)
    dims = {d % rank for d in op.dims}
    if cat.dim % rank not in dims:
        return False
    parts = []
    dt = sdg.tensors[e.src].dtype
    for p in sdg.in_edges[cat.op_id]:
        expr = compose(p.expr, cat.domain.variables, e.expr) if p.cond is None else None
        if expr is None or not expr.is_point() or sdg.tensors[p.src].dtype != dt:
            return False  # (mixed dtypes would sum parts in other widths)
        parts.append((p.src, expr))
    if len(parts) < 2:
        return False
    basis = op.domain.basis_expr
    sums: list[TensorId] = []
    for src, expr in parts:
        s = ops.SumOp(op_id=sdg.new_id(), domain=op.domain, site=op.site, tags=op.tags,
                      dims=op.dims, keepdim=op.keepdim)
        sums.append(TensorId(sdg.add_inferred(s, [(src, expr)]).op_id, 0))
    acc = sums[0]
    for s_tid in sums[1:-1]:
        add = ops.BinaryOp(op_id=sdg.new_id(), domain=op.domain, site=op.site, tags=op.tags,
                           fn="add")
        acc = TensorId(sdg.add_inferred(add, [(acc, basis), (s_tid, basis)]).op_id, 0)
    last = ops.BinaryOp(op_id=op.op_id, domain=op.domain, site=op.site, tags=op.tags,
                        fn="add")
    sdg.redefine(last, [(acc, basis), (sums[-1], basis)])
    return True
