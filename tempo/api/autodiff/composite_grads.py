"""`.grad` of the intermediates of a composite `backward()` lowered to a fused op (API §3.7:
after propagation every intermediate keeps its `.grad`).

The lowering (`compiler/passes/lower_fused`) replaces a hand-written softmax, norm or
attention by one fused op whose closed-form gradient never computes the composite's
intermediates; the absorbed ops stay in the graph, read only by each other. When the user
still holds a handle on one of them, its gradient is derived here from the upstream
gradient at the composite's output, by the composite's own reverse rules (the final op
as it was recorded, then every absorbed op in reverse order): ops that read the dead
composite, so the dead-code pass removes them unless the user reads that `.grad`. Nested
composites (a hand-written softmax inside attention) are walked outermost first, each
seeded with what the enclosing one computed for its output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.autodiff.grad_rules import grad_rule
from tempo.compiler.passes.lower_fused_match import Lowered
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.sdg import Edge, TensorId

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor as RT


def composite_grads(bw: Any, lowered: Sequence[Lowered]) -> dict[TensorId, RT]:
    """The gradient of every intermediate of the `lowered` composites that a live user
    handle can read (`bw`: the backward pass, with its adjoints and tape)."""
    sdg, tape = bw.sdg, bw.tape
    live = {tid for rec in lowered for i in rec.members if i in sdg.ops
            for tid in _outputs(sdg, i) if _held(tape, tid)}
    if not live:
        return {}
    first = sdg._next_id
    total: dict[TensorId, RT] = {}
    for rec in reversed(lowered):
        out = TensorId(rec.final.op_id, 0)
        g = bw.adj.get(out, total.get(out))
        if g is None or not all(i in sdg.ops for i in rec.members):
            continue
        # where the fused op's own gradient is masked (a nested composite's seed already is)
        mask = bw.support.mask(rec.final.op_id) if out in bw.adj else None
        parts: dict[TensorId, list[RT]] = {}
        _apply(bw, rec.final, rec.reads, [g], rec.members, parts)
        for op_id in sorted(rec.members, reverse=True):
            op = sdg.ops[op_id]
            gs = [_sum(parts.get(t)) for t in (TensorId(op_id, k)
                                                for k in range(op.num_outputs))]
            for k, gk in enumerate(gs):
                if gk is not None:
                    tid = TensorId(op_id, k)
                    total[tid] = gk if mask is None else bw._masked(gk, mask, op.domain)
            if any(gk is not None for gk in gs):
                reads = tuple(sorted(sdg.in_edges[op_id], key=lambda e: e.sink_in))
                _apply(bw, op, reads, gs, rec.members, parts)
    keep = {t: g for t, g in total.items() if t in live}
    _drop_unread(sdg, first, keep)
    return keep


def _apply(bw: Any, op: ops.Op, reads: Sequence[Edge], gs: list[RT | None],
           members: frozenset[int], parts: dict[TensorId, list[RT]]) -> None:
    """One reverse rule: the contributions of `op`'s output gradients `gs` to the members
    it reads (not across edges autodiff does not differentiate)."""
    xs = [bw._wrap(e.src, e.expr) for e in reads]
    ys = [bw._wrap(TensorId(op.op_id, k)) for k in range(op.num_outputs)]
    grads = grad_rule(op)(op, xs, ys, gs)
    for e, g in zip(reads, grads):
        if g is None or e.src.op_id not in members or (op.op_id, e.sink_in) in bw.tape.stopped:
            continue
        if not dtypes.is_float(bw.sdg.tensors[e.src].dtype):
            continue
        parts.setdefault(e.src, []).append(g)


def _sum(gs: list[RT] | None) -> RT | None:
    if not gs:
        return None
    out = gs[0]
    for g in gs[1:]:
        out = out + g
    return out


def _outputs(sdg: Any, op_id: int) -> list[TensorId]:
    return [TensorId(op_id, k) for k in range(sdg.ops[op_id].num_outputs)
            if dtypes.is_float(sdg.tensors[TensorId(op_id, k)].dtype)]


def _held(tape: Any, tid: TensorId) -> bool:
    """A user handle on `tid` is alive (the tape keeps them weakly)."""
    return any(ref() is not None for ref in tape.produced.get(tid, []))


def _drop_unread(sdg: Any, first: int, keep: dict[TensorId, RT]) -> None:
    """Remove the ops recorded here that no kept gradient is made of."""
    made = {i for i in range(first, sdg._next_id) if i in sdg.ops}
    need: set[int] = set()
    work = [g.tensor_id.op_id for g in keep.values() if g.tensor_id.op_id in made]
    while work:
        i = work.pop()
        if i not in need:
            need.add(i)
            work += [e.src.op_id for e in sdg.in_edges[i] if e.src.op_id in made]
    sdg.remove_ops(made - need)
