"""Commit recurrences: a merge's branch i holds where c_i and no earlier branch holds.

The runtime's if/elif chain already picks the first true branch; the scheduler needs the
exact condition on each edge so that a branch's dependence exists only where it is taken.
"""

from __future__ import annotations

from dataclasses import replace

from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.index_expr import BooleanIndexValue, ConstBool, IndexSequence, Symbol
from tempo.core.sdg import SDG, TensorId


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    for op in list(sdg.topological()):
        if not isinstance(op, ops.MergeOp):
            continue
        taken: BooleanIndexValue = ConstBool(False)
        edges = []
        for e in sdg.in_edges[op.op_id]:
            cond = e.cond if e.cond is not None else ConstBool(True)
            edges.append(replace(e, cond=cond & ~taken))
            taken = taken | cond
        sdg.set_in_edges(op.op_id, edges)
    return sdg


def drop_trivial_merges(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    """A merge with one unconditional branch that reads its value at the value's own point
    is an alias: its readers read the value directly (edges composed), and the merge is
    left without readers for dead-code elimination. Autodiff's adjoints are such merges."""
    for op in list(sdg.topological()):
        if not isinstance(op, ops.MergeOp) or op.domain.ubounds != _default_bounds(op):
            continue
        branches = sdg.in_edges[op.op_id]
        if len(branches) != 1:
            continue
        (b,) = branches
        if b.cond is not None and not (isinstance(b.cond, ConstBool) and b.cond.const):
            continue
        value = sdg.ops[b.src.op_id]
        if b.src == TensorId(op.op_id, 0) or not _is_own_basis(b.expr, value.domain):
            continue
        positions = [op.domain.find_variable_index(v) for v in value.domain.variables]
        for e in list(sdg.out_edges.get(op.op_id, [])):
            if e.src != TensorId(op.op_id, 0):
                continue
            expr = IndexSequence(tuple(e.expr[k] for k in positions))
            sdg.in_edges[e.sink][e.sink_in] = replace(e, src=b.src, expr=expr)
            sdg.out_edges[op.op_id].remove(e)
            sdg.out_edges.setdefault(b.src.op_id, []).append(sdg.in_edges[e.sink][e.sink_in])
    return sdg


def _default_bounds(op: ops.Op) -> tuple:
    return tuple(v.as_bound() for v in op.domain.variables)


def _is_own_basis(expr: IndexSequence, domain: object) -> bool:
    vs = domain.variables  # type: ignore[attr-defined]
    return len(expr) == len(vs) and all(
        isinstance(m, Symbol) and m.name == v.name for m, v in zip(expr, vs)
    )
