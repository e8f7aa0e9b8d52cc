"""Common-subexpression elimination: two deterministic ops of the same kind, parameters,
domain and reads compute the same values, so readers of the second read the first. This
is what removes the duplicated forward pass of RL learners (acting and learning).
Recurrences count too: two merges with the same branches are the same tensor."""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Hashable

import numpy as np

from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.domain import Domain
from tempo.core.sdg import SDG, TensorId

_IMPURE = (ops.RandOp, ops.UDFSourceOp, ops.SinkUDFOp, ops.MapUDFOp, ops.BarrierOp)
_SKIP_FIELDS = {"op_id", "site", "tags"}


def _param_key(v: object) -> Hashable:
    if isinstance(v, np.ndarray):
        return ("nd", v.shape, str(v.dtype), v.tobytes())
    if isinstance(v, Domain):  # (its hash is not cached; its text is the same key)
        return ("domain", repr(v))
    try:
        hash(v)
        return v
    except TypeError:
        return ("id", id(v))


_PARAMS: weakref.WeakKeyDictionary[ops.Op, Hashable] = weakref.WeakKeyDictionary()


def _params(op: ops.Op) -> Hashable:
    """The op's kind and parameters (cached: ops are immutable, constants are large)."""
    key = _PARAMS.get(op)
    if key is None:
        key = _PARAMS[op] = (type(op), tuple(
            (f.name, _param_key(getattr(op, f.name)))
            for f in dataclasses.fields(op)
            if f.name not in _SKIP_FIELDS
        ))
    return key


def signature(sdg: SDG, op: ops.Op) -> Hashable:
    """What determines the op's values: its kind, parameters, domain and reads."""
    return (_params(op), tuple((e.src, e.expr, e.cond) for e in sdg.in_edges[op.op_id]))


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    seen: dict[Hashable, ops.Op] = {}
    for op in sdg.topological():
        if isinstance(op, _IMPURE) or "__NO_DEDUP__" in op.tags:
            continue
        outs = [TensorId(op.op_id, k) for k in range(op.num_outputs)]
        if any(tid in sdg.keep for tid in outs):
            continue
        first = seen.setdefault(signature(sdg, op), op)
        if first is op:
            continue
        for tid in outs:
            sdg.replace_all_uses(tid, TensorId(first.op_id, tid.output_id))
        sdg.remove_ops([op.op_id])
    return sdg
