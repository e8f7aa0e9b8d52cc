"""Point stores a tracked run charges with static bytes instead of asking each value.

A tracked run's point store (`TrackedStore`) asks every written value for its storage (a
tensor's `_base` and `nbytes`) and keeps a holder count per storage, so that a value
stored twice (a recurrence taking a branch's point) is counted once. That costs ~3-7 µs a
point on this machine, more than most kernels it accounts for (the E1 decoder writes and
frees 1,024 layer outputs a run). A value the op has just computed into memory of its
own (a matmul, an elementwise op, a norm: never an input or a view of one) needs none of
that: its bytes are known when the code is generated, and no other holder can have been
counted for it yet. So the generated code writes it into the same dict (the store's own
`dict.__setitem__`, no Python frame), charges `_A.live += n` as it does a local's, and a
free credits `n` when the pop found the point.

A later holder of the same value (a merge storing it under another name in a
`TrackedStore`) is charged by storage there: both count it until one of them is freed
(the frees of a recurrence's branch follow its read, so an over-count of one point for a
few statements; never an under-count).
"""

from __future__ import annotations

from typing import Any

from tempo.core import ops
from tempo.core.ops_fused import AttentionOp, NormOp, SoftmaxOp
from tempo.core.ops_region import Ref, RegionOp
from tempo.core.ops_tiled import TiledAttentionOp, TiledReduceOp
from tempo.core.sdg import SDG, TensorId
from tempo.runtime.stores import TrackedStore

_FRESH: tuple[type[ops.Op], ...] = (
    ops.BinaryOp, ops.UnaryOp, ops.WhereOp, ops.MatMulOp, ops.ConvOp, SoftmaxOp, NormOp,
    AttentionOp, TiledAttentionOp, TiledReduceOp, ops.IndexSelectOp, ops.GatherOp)
"""Ops whose kernels always return new memory (never an input, never a view of one)."""

_VIEWS: tuple[type[ops.Op], ...] = (ops.ReshapeOp, ops.PermuteOp, ops.ExpandOp, ops.SliceOp,
                                    ops.IdentOp)


def fresh_output(op: ops.Op, k: int) -> bool:
    """Whether output `k` of `op` is always memory the op allocated itself: a fresh op's,
    or a fused region's whose output is such a member's (through views of it)."""
    if isinstance(op, RegionOp):
        r: Ref = op.outputs[k]
        while not r.is_input and isinstance(op.body[r.member], _VIEWS):
            r = op.reads[r.member][0]
        return not r.is_input and isinstance(op.body[r.member], _FRESH)
    return isinstance(op, _FRESH)


def static_tensors(sdg: SDG, stores: dict[TensorId, Any],
                   candidates: set[TensorId]) -> set[TensorId]:
    """The candidates (point stores of a tracked run, not locals) whose store is exactly a
    `TrackedStore` (a swapping store keeps its own holders), whose shape is static and
    whose one producer always returns fresh memory."""
    out = set()
    for tid in candidates:
        info = sdg.tensors[tid]
        if type(stores.get(tid)) is TrackedStore and \
                all(isinstance(d, int) for d in info.shape) and \
                fresh_output(sdg.ops[tid.op_id], tid.output_id):
            out.add(tid)
    return out


def nbytes(sdg: SDG, tid: TensorId) -> int:
    info = sdg.tensors[tid]
    n = info.dtype.repr_bytes
    for d in info.shape:
        n *= int(d)
    return n


def write_name(store: str) -> str:
    return "d" + store


def pop_name(store: str) -> str:
    return "f" + store


def charge_lines(tid: TensorId, n: int, pad: str) -> list[str]:
    """The charge of a static point just written (the same statements as a local's, so
    `codegen_charges.tighten` merges it with its neighbours)."""
    return [f"{pad}_A.live += {n}", f"{pad}if _A.live > _A.peak:",
            f"{pad}    _A.high({tid.op_id}, {tid.output_id}, {n})"]


def free_lines(store: str, key: str, n: int, pad: str) -> list[str]:
    """The free of a static point: credited only when the store held it (a free may run
    where no write did, as a store's `pop(key, None)` allows)."""
    return [f"{pad}if {pop_name(store)}({key}, None) is not None:",
            f"{pad}    _A.live -= {n}"]


def bind(ns: dict[str, Any], store: str, obj: dict) -> None:
    """The store's own dict write and pop, bound (no Python frame: C calls)."""
    ns[write_name(store)] = dict.__setitem__.__get__(obj)
    ns[pop_name(store)] = dict.pop.__get__(obj)
