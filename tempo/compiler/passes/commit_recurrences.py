"""Commit recurrences: a merge's branch i holds where c_i and no earlier branch holds.

The runtime's if/elif chain already picks the first true branch; the scheduler needs the
exact condition on each edge so that a branch's dependence exists only where it is taken.
"""

from __future__ import annotations

from dataclasses import replace

from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.index_expr import BooleanIndexValue, ConstBool
from tempo.core.sdg import SDG


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
