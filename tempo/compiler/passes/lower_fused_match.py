"""The matching half of the fused-composite lowering (`lower_fused`): a `Match` walks back
from the op that would become the fused op, collecting the ops it absorbs ("members"),
and accepts only what the fused op computes exactly.

A member is read at the reader's own point (same domain, unconditional, identity
index), is not kept by the user, and at the end every reader of every member is another
member (or an op an earlier lowering of the same walk absorbed, which the dead-code pass
removes): a value read outside the composite (the user's `e` of `e / e.sum()` printed, or
the backward reading the probabilities) keeps the composite as it is, since lowering
would compute it twice. Edges cut by `detach()` (the `stopped` set autodiff keeps) may
only read the max shift of a softmax (the result does not depend on it); any other cut
edge inside the pattern changes the gradient, so it keeps the composite.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.index_expr import IndexSequence
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import dims_equal

O = TypeVar("O", bound=ops.Op)


@dataclass(frozen=True)
class Lowered:
    """One composite a walk lowered: its final op and reads as they were, and the ops it
    absorbed (left in the graph, read only by each other, for the dead-code pass): what
    autodiff needs to give the composite's intermediates a `.grad` (API §3.7)."""

    final: ops.Op
    reads: tuple[Edge, ...]
    members: frozenset[int]
    rule: str = ""  # the rule's `algebraic_optims_to_disable` name


@dataclass
class Walk:
    """What one walk over a graph shares between its matches: the edges autodiff will not
    differentiate (`detach()`), the ops earlier lowerings absorbed, and what it lowered."""

    stopped: frozenset[tuple[int, int]] = frozenset()
    absorbed: set[int] = field(default_factory=set)
    lowered: list[Lowered] = field(default_factory=list)


class Match:
    """One attempt at lowering the composite that ends at `final`."""

    def __init__(self, sdg: SDG, final: ops.Op, walk: Walk | None) -> None:
        walk = Walk() if walk is None else walk
        self.sdg, self.final, self.walk = sdg, final, walk
        self.final_reads = tuple(sorted(sdg.in_edges[final.op_id], key=lambda e: e.sink_in))
        self.stopped, self.absorbed = walk.stopped, walk.absorbed
        self.names = [v.name for v in final.domain.variables]
        self.members: set[int] = {final.op_id}
        self.allow_cut: list[Edge] = []  # edges inside a softmax's max shift
        self.shift_uses: list[Edge] = []  # the pattern's reads of that shift

    # ---------------------------------------------------------------- edges
    def arg(self, op: ops.Op, k: int) -> Edge:
        return next(e for e in self.sdg.in_edges[op.op_id] if e.sink_in == k)

    def args(self, op: ops.Op) -> list[Edge]:
        return sorted(self.sdg.in_edges[op.op_id], key=lambda e: e.sink_in)

    def cut(self, e: Edge) -> bool:
        return (e.sink, e.sink_in) in self.stopped

    def inner(self, e: Edge, kind: type[O], fn: str | tuple[str, ...] | None = None
              ) -> O | None:
        """The op `e` reads if it can be absorbed: of `kind` (and `fn`), read at the same
        point, output 0, not kept; it becomes a member."""
        op = self.sdg.ops[e.src.op_id]
        if not isinstance(op, kind) or e.src.output_id != 0 or e.cond is not None:
            return None
        if fn is not None and getattr(op, "fn", None) not in ((fn,) if isinstance(fn, str)
                                                            else fn):
            return None
        if ([v.name for v in op.domain.variables] != self.names
                or [str(m) for m in e.expr] != self.names or self.sdg.is_kept(op.op_id)):
            return None
        if self.cut(e) and e not in self.allow_cut:
            return None
        self.members.add(op.op_id)
        return op

    def outer(self, e: Edge) -> Edge | None:
        """`e` as a read of a value from outside the composite (unconditional, not cut)."""
        return None if e.cond is not None or self.cut(e) else e

    # ---------------------------------------------------------------- values
    def shape(self, op: ops.Op, k: int = 0) -> tuple[object, ...]:
        return tuple(self.sdg.tensors[TensorId(op.op_id, k)].shape)

    def rank(self, op: ops.Op) -> int:
        return len(self.shape(op))

    def scalar(self, e: Edge) -> float | None:
        """The value of a one-element constant `e` reads (no member: constants may be shared)."""
        op = self.sdg.ops[e.src.op_id]
        if isinstance(op, ops.ConstOp) and op.value.size == 1 and e.cond is None:
            return float(np.asarray(op.value).reshape(()))
        return None

    def scalar_side(self, op: ops.Op) -> tuple[float, Edge] | None:
        """For a binary op with a one-element constant on one side: (constant, other side)."""
        a, b = self.arg(op, 0), self.arg(op, 1)
        cb, ca = self.scalar(b), self.scalar(a)
        if cb is not None and ca is None:
            return cb, a
        if ca is not None and cb is None:
            return ca, b
        return None

    @staticmethod
    def same_dims(a: Iterable[object], b: Iterable[object]) -> bool:
        x, y = tuple(a), tuple(b)
        return len(x) == len(y) and all(dims_equal(p, q) for p, q in zip(x, y))

    @staticmethod
    def same_read(a: Edge, b: Edge) -> bool:
        return a.src == b.src and str(a.expr) == str(b.expr) and a.cond is None and b.cond is None

    def is_float_like_final(self, x: Edge) -> bool:
        """`x` is a float tensor of the final op's dtype and shape (nothing broadcast it)."""
        out = self.sdg.tensors[TensorId(self.final.op_id, 0)]
        info = self.sdg.tensors[x.src]
        return (dtypes.is_float(info.dtype) and info.dtype == out.dtype
                and self.same_dims(self.sdg.read_shape(x), out.shape))

    # ---------------------------------------------------------------- reductions
    def kept_reduce(self, e: Edge, kind: type[ops.SumOp | ops.MaxOp], shift: bool = False
                    ) -> tuple[ops.Op, tuple[int, ...]] | None:
        """A reduction of `kind` with its reduced dims kept as size 1 that `e` reads:
        `keepdim=True`, or a reshape putting the size-1 dims back; (op, dims). With
        `shift` the reads on the way may be cut (see `shift`)."""
        if shift:
            self.allow_cut.append(e)
        red = self.inner(e, kind)
        if red is None:
            op = self.inner(e, ops.ReshapeOp)
            if op is None:
                return None
            if shift:
                self.allow_cut.append(self.arg(op, 0))
            red = self.inner(self.arg(op, 0), kind)
            if red is None or red.keepdim:
                return None
            dims = self._dims(red)
            src = self.sdg.read_shape(self.arg(red, 0))
            want = tuple(1 if i in dims else d for i, d in enumerate(src))
            if not self.same_dims(self.sdg.tensors[TensorId(op.op_id, 0)].shape, want):
                return None
            return red, dims
        if not red.keepdim:
            return None
        return red, self._dims(red)

    def shift(self, e: Edge) -> tuple[ops.Op, tuple[int, ...]] | None:
        """The max of a softmax's shift that `e` reads: `x.max(d, keepdim=True)`, or as
        `logsumexp` guards it, `where(isinf(m), 0, m)`. Reads into it may be cut
        (`detach()`): the result does not depend on the shift."""
        self.shift_uses.append(e)
        self.allow_cut.append(e)
        guard = self.inner(e, ops.WhereOp)
        if guard is None:
            return self.kept_reduce(e, ops.MaxOp, shift=True)
        cond, zero, m = self.args(guard)
        self.allow_cut.append(cond)
        isinf = self.inner(cond, ops.UnaryOp, "isinf")
        if isinf is None or self.scalar(zero) != 0.0:
            return None
        self.allow_cut.extend([m, self.arg(isinf, 0)])
        got = self.kept_reduce(m, ops.MaxOp, shift=True)
        if got is None or not self.same_read(self.arg(isinf, 0), m):
            return None
        return got

    def _dims(self, red: ops.SumOp | ops.MaxOp) -> tuple[int, ...]:
        n = len(self.sdg.read_shape(self.arg(red, 0)))
        raw = (red.dim,) if isinstance(red, ops.MaxOp) else tuple(red.dims)
        return tuple(sorted(d % n for d in raw))

    def mean(self, e: Edge) -> tuple[Edge, tuple[int, ...]] | None:
        """`sum(v, dims, keepdim) / n` (or `* (1/n)`) with n the number of elements summed:
        (the read of v, dims)."""
        op = self.inner(e, ops.BinaryOp, ("div", "mul"))
        if op is None:
            return None
        side = self.scalar_side(op)
        if side is None or (op.fn == "div" and side[1] != self.arg(op, 0)):
            return None
        c, rest = side
        got = self.kept_reduce(rest, ops.SumOp)
        if got is None:
            return None
        red, dims = got
        v = self.arg(red, 0)
        src = tuple(self.sdg.read_shape(v))
        n = 1
        for d in dims:
            if not isinstance(src[d], int):
                return None
            n *= src[d]
        want = float(n) if op.fn == "div" else 1.0 / n
        if not np.isclose(c, want, rtol=1e-6, atol=0.0):
            return None
        return v, dims

    # ---------------------------------------------------------------- the end
    def closed(self, unread_outputs: Iterable[TensorId] = ()) -> bool:
        """Every reader of a member (the final op aside) is a member; `unread_outputs`
        (the indices of a max) are read by nobody."""
        for i in self.members - {self.final.op_id}:
            if any(e.sink not in self.members and e.sink not in self.absorbed
                   for e in self.sdg.out_edges.get(i, [])):
                return False
        return not any(e.sink not in self.absorbed for t in unread_outputs
                       for e in self.sdg.readers(t))

    def done(self) -> None:
        """The match was lowered: its members are now read only by each other."""
        self.absorbed |= self.members - {self.final.op_id}
        self.walk.lowered.append(Lowered(self.final, self.final_reads,
                                         frozenset(self.members - {self.final.op_id})))

    def shift_ok(self) -> bool:
        """The max shift's reads are all cut or none is (a partial cut changes the gradient)."""
        return len({self.cut(e) for e in self.shift_uses}) <= 1

    def inputs(self, *edges: Edge) -> list[tuple[TensorId, IndexSequence]]:
        return [(e.src, e.expr) for e in edges]
