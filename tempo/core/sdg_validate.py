"""Consistency checks of an SDG: what every pass must preserve. The pass manager runs them
between passes (`validate_pipeline_stages`) so a broken rewrite is caught where it happens,
not as a wrong result or an isl error three stages later."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from tempo.core import ops
from tempo.core.errors import TempoError
from tempo.core.index_expr import Symbol
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import Shape


def problems(sdg: SDG, limit: int = 10, only: Iterable[int] | None = None) -> list[str]:
    """Up to `limit` descriptions of inconsistencies (empty when the graph is sound):
    edge lists that disagree, reads of missing tensors or of the wrong rank, reads using
    variables the reader does not iterate over, missing tensor records, wrong input
    counts, and shapes or dtypes that the op's rule does not give. `only` limits the
    per-op checks (shapes, reads) to those ops: a pass's changes (`SDG.take_changed`)."""
    out: list[str] = []
    ids = sdg.ops.keys() if only is None else [i for i in only if i in sdg.ops]
    _check_edges(sdg, out, ids)
    _check_tensors(sdg, out)
    if not out:  # shape rules assume sound edges
        for i in ids:
            _check_shapes(sdg, sdg.ops[i], out)
    return out[:limit]


def _check_edges(sdg: SDG, out: list[str], ids: Iterable[int]) -> None:
    outgoing = {id(e) for es in sdg.out_edges.values() for e in es}
    incoming = {id(e) for es in sdg.in_edges.values() for e in es}
    if set(sdg.in_edges) != set(sdg.ops):
        out.append(f"in-edge lists for {sorted(set(sdg.in_edges) ^ set(sdg.ops))} "
                   "do not match the ops")
        return
    for op_id, es in sdg.in_edges.items():
        sink = sdg.ops.get(op_id)
        for k, e in enumerate(es):
            where = f"input {k} of {sink!r}"
            if e.sink != op_id or e.sink_in != k:
                out.append(f"{where} is recorded as input {e.sink_in} of op {e.sink}")
            if id(e) not in outgoing:
                out.append(f"{where} (reading {e.src!r}) is missing from its source's readers")
            if e.src.op_id not in sdg.ops:
                out.append(f"{where} reads {e.src!r} of a missing op")
    for op_id in ids:
        for k, e in enumerate(sdg.in_edges[op_id]):
            _check_read(sdg, e, f"input {k} of {sdg.ops[op_id]!r}", out)
    for op_id, es in sdg.out_edges.items():
        for e in es:
            if e.src.op_id != op_id or id(e) not in incoming:
                out.append(f"a read of {e.src!r} by op {e.sink} is listed under op {op_id} "
                           "but not among its reader's inputs")


def _check_read(sdg: SDG, e: Edge, where: str, out: list[str]) -> None:
    src, sink = sdg.ops.get(e.src.op_id), sdg.ops.get(e.sink)
    if src is None or sink is None:
        out.append(f"{where} reads {e.src!r} of a missing op")
        return
    if e.src.output_id >= src.num_outputs:
        out.append(f"{where} reads output {e.src.output_id} of {src!r}")
    if len(e.expr) != len(src.domain):
        out.append(f"{where} reads {src!r} (domain {src.domain}) at {e.expr}: wrong rank")
    stray = e.var_names - {v.name for v in sink.domain.variables}
    if stray:
        out.append(f"{where} reads {src!r} at {e.expr} using {sorted(stray)}, which "
                   f"{sink!r} (domain {sink.domain}) does not iterate over")


def _check_tensors(sdg: SDG, out: list[str]) -> None:
    expected = {TensorId(i, k) for i, op in sdg.ops.items() for k in range(op.num_outputs)}
    if set(sdg.tensors) != expected:
        diff = sorted(set(sdg.tensors) ^ expected, key=lambda t: (t.op_id, t.output_id))
        out.append(f"tensor records {diff[:5]} do not match the ops' outputs")
    for name, tids in (("kept", sdg.keep), ("block-stored", set(sdg.block_stores))):
        missing = sorted(t.op_id for t in tids if t not in sdg.tensors)
        if missing:
            out.append(f"{name} tensors of ops {missing[:5]} do not exist")
    for op in sdg.ops.values():
        n = len(sdg.in_edges.get(op.op_id, []))
        if not op.variadic and n != op.arity:
            out.append(f"{op!r} has {n} inputs, its op takes {op.arity}")


def _same_shape(a: Shape, b: Shape, bounds: Mapping[Symbol, int] | None = None) -> bool:
    if bounds:
        a, b = _at_bounds(a, bounds), _at_bounds(b, bounds)
    if a.is_static() and b.is_static():
        return tuple(a) == tuple(b)
    return str(a) == str(b) or a == b


def _at_bounds(s: Shape, bounds: Mapping[Symbol, int]) -> Shape:
    """`s` with the compile-time bounds substituted: a pass that batches over `t` writes
    its static size `T` where the recorded graph has the symbol (the discount matrix of
    `rl.gae` is `(T, T)`); both mean the same shape in this compilation."""
    return s if s.is_static() else Shape.from_(s.try_resolve(bounds))


def _check_shapes(sdg: SDG, op: ops.Op, out: list[str]) -> None:
    edges = sdg.in_edges[op.op_id]
    bounds = sdg.bound_defs
    shapes = [_at_bounds(sdg.read_shape(e), bounds) for e in edges]
    dts = [sdg.tensors[e.src].dtype for e in edges]
    have = [sdg.tensors[TensorId(op.op_id, k)] for k in range(op.num_outputs)]
    if isinstance(op, ops.MergeOp):
        for k, (s, dt) in enumerate(zip(shapes, dts)):
            if not _same_shape(s, op.shape, bounds) or dt != op.dtype:
                out.append(f"branch {k} of {op!r} gives {s} {dt}, the recurrence is "
                           f"{op.shape} {op.dtype}")
        return
    params = {f.name: getattr(op, f.name) for f in dataclasses.fields(op)}
    # shape parameters (an expand's target) resolve as the inputs do: a recorded (B, T)
    # target of a static (1, 10) input is sound when T is 10 in this compilation
    resolved: dict[str, Any] = {k: _at_bounds(v, bounds) for k, v in params.items()
                if isinstance(v, Shape) and not v.is_static()}
    params.update(resolved)
    rule = dataclasses.replace(op, **resolved) if resolved else op
    if op.input_dtypes(dts, **params) != dts:
        out.append(f"{op!r} reads {[str(d) for d in dts]}; its kernels take "
                   f"{[str(d) for d in op.input_dtypes(dts, **params)]} (a cast is missing)")
    try:
        want_shapes, want_dts = rule.infer(shapes, dts)
    except (TempoError, ValueError, TypeError, IndexError) as exc:
        out.append(f"{op!r} no longer fits its inputs {shapes} {dts}: {exc}")
        return
    for k, (info, s, dt) in enumerate(zip(have, want_shapes, want_dts)):
        if not _same_shape(info.shape, s, bounds) or info.dtype != dt:
            out.append(f"output {k} of {op!r} is recorded as {info.shape} {info.dtype}, its "
                       f"inputs give {s} {dt}")
