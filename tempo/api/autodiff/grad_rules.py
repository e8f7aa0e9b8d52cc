"""The autodiff's rule of each primitive: its gradient, keyed by op class, and the helpers
rules share (`unbroadcast`, `pad_back`).

The rules themselves are registered by the primitive modules (`tempo.prims`), next to the
op's other rules. A rule maps (op, inputs as read at the op's point, outputs, output grads)
to one gradient per input (None: no gradient for that input). Rules build RT ops, so
gradients are SDG ops too. An op without a gradient is registered `NOT_DIFFERENTIABLE`
(a gradient reaching it is an error); merges are reversed by `backward` itself
(`BY_BACKWARD`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import record1
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoError
from tempo.core.shape import Shape

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor as RT

Grads = list["RT | None"]
Xs = Sequence["RT"]
Gs = Sequence["RT | None"]
Rule = Callable[[Any, Sequence["RT"], Sequence["RT"], Sequence["RT | None"]], Grads]


def _is_one(d: Any) -> bool:
    return isinstance(d, int) and d == 1


def unbroadcast(g: RT, shape: Shape) -> RT:
    """Sum `g` down to `shape` (numpy broadcasting in reverse): the one place it is done."""
    want, have = list(shape), list(g.shape)
    lead = len(have) - len(want)
    if lead > 0:
        g = g.sum(tuple(range(lead)))
    keep = [i for i, (w, h) in enumerate(zip(want, list(g.shape))) if _is_one(w) and not _is_one(h)]
    if keep:
        g = g.sum(tuple(keep), keepdim=True)
    return g


def zeros_of(shape: Shape, dt: Any) -> RT:
    from tempo.api.ops.creation import zeros

    return zeros(tuple(shape), dt)


def scalar_like(v: float, like: RT) -> RT:
    from tempo.api.ops.creation import const

    return const(v, dtype=like.dtype)


class GradMarker:
    """A registry entry that is not a rule: NOT_DIFFERENTIABLE or BY_BACKWARD."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NOT_DIFFERENTIABLE = GradMarker("NOT_DIFFERENTIABLE")
"""No gradient flows through the op: reaching it with a gradient raises a TempoError."""
BY_BACKWARD = GradMarker("BY_BACKWARD")
"""Differentiated by `backward` itself (merges: backprop through the recurrence)."""

_GRADS: dict[type[ops.Op], Rule | GradMarker] = {}


def register_grad(op_cls: type[ops.Op], rule: Rule | GradMarker) -> None:
    if op_cls in _GRADS:
        raise ValueError(f"{op_cls.__name__} already has a gradient rule")
    _GRADS[op_cls] = rule


def has_grad_entry(op_cls: type[ops.Op]) -> bool:
    """Whether `op_cls` has a rule or a marker (the prims completeness test)."""
    return op_cls in _GRADS


def grad_rule(op: ops.Op) -> Rule:
    """The rule `backward` applies to `op` (a NOT_DIFFERENTIABLE op's rule raises if a
    gradient reaches it; an unregistered op raises, naming it)."""
    rule = _GRADS.get(type(op))
    if rule is NOT_DIFFERENTIABLE:
        return _not_differentiable
    if rule is None or isinstance(rule, GradMarker):
        raise TempoError(f"no gradient rule for {op!r}", site=op.site)
    return rule


def _not_differentiable(op: Any, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    if any(g is not None for g in gs):
        raise TempoError(f"no gradient rule for {op!r}", site=op.site)
    return [None] * len(xs)


def pad_back(g: RT, dim: int, start: Any, size: Any, length: Any) -> RT:
    """`g` (length `length` along `dim`) placed at `start` of a zero tensor of `size` (an
    index_add, or a scatter_add with `enable_index_ops=False`)."""
    from tempo.api.ops.creation import arange, from_expr
    from tempo.api.ops.indexing_ops import index_add

    if all(isinstance(v, int) for v in (start, size, length)):
        pad = [(0, 0)] * g.ndim
        pad[dim] = (start, size - start - length)
        return record1(ops.PadOp, [g], padding=tuple(pad))
    idx = arange(length).cast(dtypes.int64)
    if not (isinstance(start, int) and start == 0):
        st = from_expr(start) if not isinstance(start, int) else start
        idx = (idx + st).cast(dtypes.int64)
    shape = list(g.shape)
    shape[dim] = size
    return index_add(zeros_of(Shape.from_(tuple(shape)), g.dtype), dim, idx, g)
