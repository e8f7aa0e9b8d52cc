"""What autodiff must remember from record time: edges cut by `detach()`/`requires_grad=False`
inputs, and the leaf wrappers (requires_grad=True, no backward context) that get `.grad`."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tempo.core.sdg import TensorId

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tempo.api.recurrent_tensor import RecurrentTensor
    from tempo.api.tensor_base import RTBase
    from tempo.compiler.passes.lower_fused_match import Lowered

_ATTR = "_autodiff_tape"


@dataclass(frozen=True)
class BackwardCtx:
    """The `_ctx` of an op result that requires grad: the op that made it (API §3.7)."""

    op_id: int


@dataclass
class Tape:
    """Per-context autodiff facts the SDG alone does not hold."""

    stopped: set[tuple[int, int]] = field(default_factory=set)
    leaves: dict[TensorId, list[RTBase]] = field(default_factory=dict)
    grads: dict[TensorId, RecurrentTensor] = field(default_factory=dict)
    # Op results that got a backward ctx, and their wrappers (weakly: `_ctx` is cleared after
    # backward). Leafness is a property of the tensor, not of the wrapper: `k[0:t+1]` is a new
    # wrapper without `_ctx` around the non-leaf `k`, and must not cut the chain.
    produced: dict[TensorId, list[weakref.ref[RTBase]]] = field(default_factory=dict)
    # Composites `backward()` lowered to fused ops (their intermediates still get `.grad`)
    lowered: list[Lowered] = field(default_factory=list)

    def note_input(self, sink: int, sink_in: int, x: RTBase) -> None:
        """Record whether the edge (sink, sink_in), read through wrapper `x`, carries grads."""
        if x.requires_grad is False:
            self.stopped.add((sink, sink_in))
        elif x.requires_grad is True:
            self.note_leaf(x)

    def note_leaf(self, x: RTBase) -> None:
        """`x` is a leaf (gets `.grad`) unless its tensor is the result of a recorded op."""
        if x._ctx is not None or x.tensor_id in self.produced:
            return
        ws = self.leaves.setdefault(x.tensor_id, [])
        if all(w is not x for w in ws):
            ws.append(x)

    def note_produced(self, x: RTBase, op_id: int) -> None:
        x._ctx = BackwardCtx(op_id)
        self.produced.setdefault(x.tensor_id, []).append(weakref.ref(x))

    def release(self, adjoints: dict[TensorId, Any]) -> None:
        """API §3.7: after propagation the `_ctx` of the intermediate tensors is cleared and
        their `.grad` is set (accumulated over backward calls) to their adjoint."""
        for tid, adj in adjoints.items():
            for ref in self.produced.get(tid, []):
                w = ref()
                if w is not None:
                    w._ctx = None
                    w._grad = adj if w._grad is None else w._grad + adj

    def is_leaf(self, tid: TensorId) -> bool:
        return tid in self.leaves


def tape_of(ctx: Any) -> Tape:
    """The tape of a TempoContext (created on first use)."""
    tape = getattr(ctx, _ATTR, None)
    if tape is None:
        tape = Tape()
        setattr(ctx, _ATTR, tape)
    return tape


def note_record(ctx: Any, op_id: int, inputs: Sequence[RTBase],
                outs: Sequence[RTBase]) -> None:
    """Hook of `tensor_base.record`: remember input flags, give grad-requiring outputs a ctx."""
    tape = tape_of(ctx)
    for k, x in enumerate(inputs):
        tape.note_input(op_id, k, x)
    for o in outs:
        if o.requires_grad is True:
            tape.note_produced(o, op_id)


def note_branch(ctx: Any, target: RTBase, value: Any) -> None:
    """Hook of placeholder assignment: the new branch edge is cut if the value is detached.

    A placeholder not declared `requires_grad=True` is differentiated through (API §7.11),
    so once a branch requires grad the placeholder is an intermediate like any op result:
    it requires grad and gets `.grad` after `backward()` (API §3.7)."""
    from tempo.api.tensor_base import RTBase

    merge_id = target.tensor_id.op_id
    sdg = ctx.sdg
    k = len(sdg.in_edges[merge_id]) - 1
    tape = tape_of(ctx)
    if not isinstance(value, RTBase):
        tape.stopped.add((merge_id, k))
        return
    tape.note_input(merge_id, k, value)
    if value.requires_grad is True and target.requires_grad is None:
        target.requires_grad = True
        tape.note_produced(target, merge_id)


def grad_of(x: RTBase) -> RecurrentTensor | None:
    """The gradient accumulated for x's tensor over all backward() calls so far."""
    return tape_of(x._ctx_mgr).grads.get(x.tensor_id)
