"""Graph structure: merge (a recurrence's value: the first branch whose condition holds,
conditions on the SDG edges) and barrier (a marker ordering everything before it).

A merge's kernel is the identity on the chosen branch; its gradient is backpropagation
through time, which `backward` does itself (it reverses the branch conditions).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tempo.api.autodiff.grad_rules import BY_BACKWARD, NOT_DIFFERENTIABLE
from tempo.compiler.op_rules import NO_BATCHING, free
from tempo.compiler.passes.vectorize_rules import Batching
from tempo.core import ops
from tempo.prims.define import primitive
from tempo.prims.movement import ident_kernel

if TYPE_CHECKING:
    from tempo.runtime.kernel_registry import Kernel


def barrier_kernel(op: ops.BarrierOp, be: Any) -> Kernel:
    return lambda *xs: None


def _batch_merge(op: ops.MergeOp, batched: list[bool], shapes: list[Any], D: int,
                 d: str) -> Batching | None:
    """Every branch is read with D (branches without it are broadcast to it); branches
    that select along d are concatenated by the pass (`vectorize_pieces`)."""
    return Batching(replace(op, shape=op.shape.prepend_dim(D)), (None,) * len(shapes),
                    expand=True)

primitive(ops.MergeOp, grad=BY_BACKWARD, batching=_batch_merge, cost=free,
          torch=ident_kernel, jax=ident_kernel, numpy=ident_kernel)
primitive(ops.BarrierOp, grad=NOT_DIFFERENTIABLE, batching=NO_BATCHING, cost=free,
          torch=barrier_kernel, jax=barrier_kernel, numpy=barrier_kernel)
