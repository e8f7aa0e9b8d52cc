"""Whether the loop form of a program reads past an end of a dimension where a side effect
needs the value: then the dimension is not vectorised, so that the scheduler's error
(which names the read, the end it leaves by and a fix) reaches the user.

A batched shift read computes every point of `0:D`, padding at the ends (`x[t+1]` at
`t = D-1` reads the edge), which is right for the points the loop also runs and garbage
for the ones it cannot: `y = x[t+1] - x` has no point `T-1`, and a sink of `y[0:T]` must
be an error (`IndexExprError`), not a value computed from the padding (accept4).

The check is the scheduler's rule (`schedule.domains.executed_domains`), evaluated with the
compile-time bound of `d`: an op's point exists where every read lands inside its source
and on a point that exists; a sink or barrier needs all its points. It only reasons where
it is sure -- reads under a condition, recurrence branches (merges) and indices that use
another variable count as existing -- so a program it passes may still fail to schedule,
never the reverse.
"""

from __future__ import annotations

import numpy as np

from tempo.core import ops
from tempo.core.index_expr import IndexExpr, Slice, Symbol
from tempo.core.sdg import SDG, Edge

MAX_POINTS = 1 << 14
"""Past this extent, shifted reads are not evaluated point by point (they count as
existing): the check costs one index evaluation per point and read."""


def reads_past_end(sdg: SDG, d: Symbol, size: int) -> bool:
    """Whether a sink or barrier needs a point of an op over `d` that the loop form cannot
    compute because some read along `d` leaves `0:size` (directly or through its sources)."""
    exists: dict[int, np.ndarray] = {}
    for op in sdg.topological():
        over = d in op.domain
        here = np.ones(size if over else 1, dtype=bool)
        if not isinstance(op, ops.MergeOp):
            for e in sdg.in_edges[op.op_id]:
                got = _read_exists(sdg, e, d, size, over, exists)
                if got is not None:
                    here &= got
        exists[op.op_id] = here
        if isinstance(op, ops.SinkUDFOp | ops.BarrierOp) and not here.all():
            return True
    return False


def _read_exists(sdg: SDG, e: Edge, d: Symbol, size: int, over: bool,
                 exists: dict[int, np.ndarray]) -> np.ndarray | None:
    """At each point of the reader (one entry if it has no `d`): whether read `e` lands on
    existing points of its source; None when it cannot tell (counts as existing)."""
    if e.cond is not None:
        return None
    src = sdg.ops[e.src.op_id]
    have = exists.get(e.src.op_id)
    if have is None:
        return None
    if d not in src.domain:
        return have if have.all() or not over else np.full(size, have[0])
    pos = src.domain.find_variable_index(d)
    if any(k != pos and d.name in _names(m) for k, m in enumerate(e.expr)):
        return None
    m = e.expr[pos]
    if isinstance(m, Symbol) and m.name == d.name:
        return have if over else None
    points: range | tuple[None] = range(size) if over and d.name in _names(m) else (None,)
    if len(points) > MAX_POINTS:
        return None
    out = np.ones(len(points), dtype=bool)
    for k, p in enumerate(points):
        values = dict(sdg.bound_defs) if p is None else {**sdg.bound_defs, d: p}
        try:
            if isinstance(m, Slice):
                lo, hi = int(m.start.evaluate(values)), int(m.stop.evaluate(values))
            else:
                lo = int(m.evaluate(values))
                hi = lo + 1
        except Exception:  # noqa: BLE001 - another variable's index: cannot tell
            return None
        out[k] = 0 <= lo <= hi <= size and bool(have[lo:hi].all())
    if over and len(out) == 1:
        out = np.full(size, out[0])
    return out


def _names(m: IndexExpr) -> set[str]:
    return {v.name for v in m.vars_used()}
