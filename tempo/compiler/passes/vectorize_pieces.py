"""Recurrences whose branches select along the vectorised dim, batched exactly by pieces.

`v_next[T-1] = value; v_next[True] = value[t+1]` commits to the branches `t == T-1` and
`t != T-1` (first true wins). Over all of `t` at once it is the concatenation of the
runs of consecutive points that take the same branch: `value[1:T]` then `value[T-1]`.
With the bounds known at compile time the conditions are evaluated at every point of
`d` (they may mention only `d` and bounds), so each boundary is placed exactly; a point
where no branch holds, a branch reading its source at an index that is neither `d + c`
nor a constant, or a condition over another loop variable leaves the recurrence looping.
"""

from __future__ import annotations

from dataclasses import dataclass

from tempo.core import ops
from tempo.core.index_expr import IndexExpr, Slice, Symbol
from tempo.core.sdg import SDG, Edge


@dataclass(frozen=True)
class Piece:
    """Points `lo:hi` of the result read branch `edge` at `start + (p - lo)` along `d`
    (`shift`) or at the single point `start` (not `shift`); `start` is None when the
    source does not iterate over `d` (its one value repeats)."""

    edge: Edge
    lo: int
    hi: int
    start: int | None
    shift: bool


Pieces = list[Piece]


def _int(x: IndexExpr, values: dict[Symbol, int]) -> int | None:
    try:
        v = x.evaluate(values)
    except Exception:  # noqa: BLE001 - an unbound symbol: not a compile-time constant
        return None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def plan_pieces(sdg: SDG, op: ops.MergeOp, d: Symbol, size: int) -> Pieces | None:
    """The runs of `op`'s branches along `d`, or None when it cannot be batched so."""
    edges = sdg.in_edges[op.op_id]
    bounds = dict(sdg.bound_defs)
    others = {v.name for v in op.domain.variables} - {d.name}
    for e in edges:
        if e.cond is not None and any(v.name in others for v in e.cond.vars_used()):
            return None
    taken: list[int] = []
    for p in range(size):
        values = {**bounds, d: p}
        k = next((k for k, e in enumerate(edges)
                  if e.cond is None or bool(e.cond.evaluate(values))), None)
        if k is None:
            return None  # undefined there: reading it must fail, as it does looping
        taken.append(k)
    pieces: Pieces = []
    lo = 0
    for p in range(1, size + 1):
        if p < size and taken[p] == taken[lo]:
            continue
        piece = _piece(sdg, edges[taken[lo]], d, lo, p, size, bounds)
        if piece is None:
            return None
        pieces.append(piece)
        lo = p
    return pieces


def _piece(sdg: SDG, e: Edge, d: Symbol, lo: int, hi: int, size: int,
           bounds: dict[Symbol, int]) -> Piece | None:
    src = sdg.ops[e.src.op_id]
    members = list(e.expr)
    if any(isinstance(m, Slice) for m in members):
        return None  # a window read per point: no single batched slice
    if d not in src.domain:
        if any(d.name in {v.name for v in m.vars_used()} for m in members):
            return None
        return Piece(e, lo, hi, None, False)
    pos = src.domain.find_variable_index(d)
    for k, m in enumerate(members):
        if k != pos and d.name in {v.name for v in m.vars_used()}:
            return None
    m = members[pos]
    if {v.name for v in m.vars_used()} - {d.name}:
        return None
    got = [_int(m, {**bounds, d: p}) for p in range(lo, hi)]
    at = [a for a in got if a is not None and 0 <= a < size]
    if len(at) < len(got):
        return None
    if all(a == at[0] + (p - lo) for p, a in enumerate(at, start=lo)):
        return Piece(e, lo, hi, at[0], True)
    if all(a == at[0] for a in at):
        return Piece(e, lo, hi, at[0], False)
    return None
