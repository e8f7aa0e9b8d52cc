"""Common-subexpression elimination: two deterministic ops of the same kind, parameters,
domain and reads compute the same values, so readers of the second read the first. This
is what removes the duplicated forward pass of RL learners (acting and learning)."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import replace

import numpy as np

from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.sdg import SDG, TensorId

_IMPURE = (ops.RandOp, ops.UDFSourceOp, ops.SinkUDFOp, ops.MapUDFOp, ops.BarrierOp, ops.MergeOp)
_SKIP_FIELDS = {"op_id", "site", "tags"}


def _param_key(v: object) -> Hashable:
    if isinstance(v, np.ndarray):
        return ("nd", v.shape, str(v.dtype), v.tobytes())
    try:
        hash(v)
        return v  # type: ignore[return-value]
    except TypeError:
        return ("id", id(v))


def signature(sdg: SDG, op: ops.Op) -> Hashable:
    params = tuple(
        (f.name, _param_key(getattr(op, f.name)))
        for f in dataclasses.fields(op)
        if f.name not in _SKIP_FIELDS
    )
    reads = tuple((e.src, e.expr, e.cond) for e in sdg.in_edges[op.op_id])
    return (type(op), params, reads)


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    seen: dict[Hashable, ops.Op] = {}
    for op in list(sdg.topological()):
        if isinstance(op, _IMPURE) or "__NO_DEDUP__" in op.tags:
            continue
        if any(TensorId(op.op_id, k) in sdg.keep for k in range(op.num_outputs)):
            continue
        sig = signature(sdg, op)
        first = seen.setdefault(sig, op)
        if first is op:
            continue
        for e in list(sdg.out_edges.get(op.op_id, [])):
            new = replace(e, src=TensorId(first.op_id, e.src.output_id))
            sdg.in_edges[e.sink][e.sink_in] = new
            sdg.out_edges[first.op_id].append(new)
        sdg.out_edges[op.op_id] = []
        sdg.remove_op(op.op_id)
    return sdg
