"""Where an adjoint can be nonzero, for ops that only feed recurrence branches.

A merge gives branch k its adjoint only where k is the first true branch, so an op whose
values reach the loss only through such branches (read point to point) has a zero adjoint
elsewhere. The forward program never computes it there (the compiler restricts ops to the
points their readers demand); its gradient rule must not either: at `t = 0` of
`y[0] = 2x; y[True] = x.sqrt()` the rule of sqrt would read `sqrt(x[0])` (NaN for x < 0)
and `0 * NaN` would poison `x.grad[0]`, and `h[0:t].mean(0)` has no elements at `t = 0`.
`BranchSupport.mask` gives the condition under which such an op's rule runs.
"""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl

from tempo.api.autodiff.reverse import Validity, point_set
from tempo.core import index_expr as ie
from tempo.core import ops
from tempo.core.sdg import SDG, Edge, TensorId

Support = tuple[ie.BooleanIndexValue, isl.Set] | None
"""A condition over an op's domain and its isl set; None: anywhere."""


class BranchSupport:
    """Per needed op, where its adjoint may be nonzero, from the merge branches it feeds."""

    def __init__(self, sdg: SDG, root: TensorId, need: set[TensorId],
                 stopped: set[tuple[int, int]],
                 first_wins: Callable[[ops.Op], dict[int, ie.BooleanIndexValue]],
                 valid: Validity) -> None:
        self.sdg, self.root, self.need, self.stopped = sdg, root, need, stopped
        self.first_wins, self.valid = first_wins, valid
        self.of_op: dict[int, Support] = {}
        # readers (non-merge) are recorded after what they read: visit newest first
        for op_id in sorted({t.op_id for t in need}, reverse=True):
            outs = [t for t in need if t.op_id == op_id]
            sups = [self._of_tensor(t) for t in outs]
            self.of_op[op_id] = None if any(s is None for s in sups) else _union(sups)

    def mask(self, op_id: int) -> ie.BooleanIndexValue | None:
        """The condition to compute the op's gradient rule under, or None when the op
        runs only where its adjoint may be nonzero anyway (no mask needed)."""
        sup = self.of_op.get(op_id)
        if sup is None or self.valid.of(op_id).is_subset(sup[1]):
            return None
        return sup[0]

    def _of_tensor(self, tid: TensorId) -> Support:
        if tid == self.root:
            return None
        op = self.sdg.ops[tid.op_id]
        if isinstance(op, ops.MergeOp):
            return None
        parts: list[Support] = []
        for e in self.sdg.out_edges.get(tid.op_id, []):
            if e.src != tid or (e.sink, e.sink_in) in self.stopped:
                continue
            sink = self.sdg.ops[e.sink]
            if not any(t.op_id == e.sink for t in self.need):
                continue
            if not _point_to_point(self.sdg, e) or (e.cond is not None and
                                                    not isinstance(sink, ops.MergeOp)):
                return None
            if isinstance(sink, ops.MergeOp):
                c = self.first_wins(sink)[e.sink_in]
                parts.append((c, point_set(op.domain, c, self.sdg.universe)))
            else:
                parts.append(self.of_op.get(e.sink))
            if parts[-1] is None:
                return None
        if not parts:
            return None
        sup = _union(parts)
        if sup is None or point_set(op.domain, None, self.sdg.universe).is_subset(sup[1]):
            return None
        return sup


def _union(parts: list[Support]) -> Support:
    cond: ie.BooleanIndexValue | None = None
    sset: isl.Set | None = None
    for p in parts:
        if p is None:
            return None
        cond = p[0] if cond is None else cond | p[0]
        sset = p[1] if sset is None else sset.union(p[1]).coalesce()
    return None if cond is None or sset is None else (cond, sset)


def _point_to_point(sdg: SDG, e: Edge) -> bool:
    """The sink at p reads the source at p (same variables, basis index)."""
    src, sink = sdg.ops[e.src.op_id], sdg.ops[e.sink]
    names = [v.name for v in src.domain.variables]
    return names == [v.name for v in sink.domain.variables] and \
        [getattr(m, "name", None) for m in e.expr] == names
