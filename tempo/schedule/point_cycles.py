"""A placeholder that reads itself in a cycle through other points, found on the concrete
bounds: `x[True] = x.previous + v` with no base case reads, at the origin, the last point
(lex_prev wraps around), which reads back down to the origin. No point waits on itself, so
the same-point search finds nothing and isl simply fails; without this the error blamed
Tempo's compiler. Only on the error path, and only for reads that are points."""

from __future__ import annotations

import itertools
from typing import Any

from tempo.core import ops
from tempo.core.index_expr import Slice, Symbol
from tempo.core.sdg import SDG, Edge

MAX_POINTS = 4096
MAX_DEPTH = 6  # ops between a placeholder's branch and its read of itself

Point = tuple[int, ...]


def point_cycle(sdg: SDG, bounds: dict[Symbol, int]) -> tuple[int, list[Point], Edge] | None:
    """(merge op id, the cycle's points in dependence order, the branch edge taken at the
    first point) for the first placeholder found reading itself around a cycle, or None."""
    for op in sdg.ops.values():
        if not isinstance(op, ops.MergeOp):
            continue
        found = _cycle_of(sdg, op, bounds)
        if found is not None:
            return found
    return None


def _cycle_of(sdg: SDG, m: ops.MergeOp, bounds: dict[Symbol, int]) -> Any:
    vars_ = m.domain.variables
    try:
        sizes = [int(ub.evaluate(bounds)) if hasattr(ub, "evaluate") else int(ub)
                 for ub in m.domain.ubounds]
    except Exception:  # noqa: BLE001 - a bound we cannot evaluate: no diagnosis
        return None
    if any(s <= 0 for s in sizes) or _prod(sizes) > MAX_POINTS:
        return None
    branches = sorted(sdg.in_edges.get(m.op_id, []), key=lambda e: e.sink_in)
    succ: dict[Point, list[Point]] = {}
    taken: dict[Point, Edge] = {}
    for p in itertools.product(*(range(s) for s in sizes)):
        values = {**bounds, **dict(zip(vars_, p))}
        e = next((b for b in branches if b.cond is None or _holds(b.cond, values)), None)
        if e is None:
            continue
        taken[p] = e
        qs: set[Point] = set()
        _reads_of(sdg, m.op_id, e, values, qs, 0)
        succ[p] = sorted(q for q in qs if all(0 <= c < s for c, s in zip(q, sizes)))
    cycle = _find_cycle(succ)
    if cycle is None:
        return None
    return m.op_id, cycle, taken[cycle[0]]


def _reads_of(sdg: SDG, target: int, e: Edge, values: dict[Symbol, int], out: set[Point],
              depth: int) -> None:
    """The points of `target` that the read `e` (evaluated at `values`, the sink's point)
    reaches through ops reading points; slices and deep chains are not followed."""
    if depth > MAX_DEPTH or any(isinstance(m, Slice) for m in e.expr):
        return
    try:
        at = tuple(int(m.evaluate(values)) for m in e.expr)
    except Exception:  # noqa: BLE001 - not a concrete point: no diagnosis through it
        return
    if e.src.op_id == target:
        out.add(at)
        return
    src = sdg.ops[e.src.op_id]
    if isinstance(src, ops.MergeOp):
        return  # another placeholder: its own cycle is checked on its own
    inner = {k: v for k, v in values.items() if k.is_bound}
    inner.update(zip(src.domain.variables, at))
    for e2 in sdg.in_edges.get(src.op_id, []):
        if e2.cond is None or _holds(e2.cond, inner):
            _reads_of(sdg, target, e2, inner, out, depth + 1)


def _holds(cond: Any, values: dict[Symbol, int]) -> bool:
    try:
        return bool(cond.evaluate(values))
    except Exception:  # noqa: BLE001
        return False


def _find_cycle(succ: dict[Point, list[Point]]) -> list[Point] | None:
    """One cycle of the point graph (iterative DFS), as its points in order."""
    state: dict[Point, int] = {}
    for root in succ:
        if state.get(root):
            continue
        stack: list[tuple[Point, int]] = [(root, 0)]
        path: list[Point] = []
        while stack:
            p, k = stack.pop()
            if k == 0:
                state[p] = 1
                path.append(p)
            nxt = succ.get(p, [])
            if k < len(nxt):
                stack.append((p, k + 1))
                q = nxt[k]
                if state.get(q) == 1:
                    return path[path.index(q):]
                if not state.get(q):
                    stack.append((q, 0))
            else:
                state[p] = 2
                path.pop()
    return None


def _prod(xs: list[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out
