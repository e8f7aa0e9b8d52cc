"""Where along the vectorised dim `d` the loop would run an op: what a batched op that
can fail on inputs from other points (an index, a user function) must keep.

The scheduler runs an op only where its readers need it (`schedule.domains`: `tok[t < P]
= prompt.index(0, t)` reads the prompt at `t < P` only; `y = x.index(0, t - 1)` read as
`y[1:T]` runs from t = 1); an op with effects (a user function, a random draw) does so
only when it feeds recurrence branches alone, else it runs on all of `d`. Batched, an op
runs at all `D` points, so its inputs at the points the loop skips are whatever the
batched producers computed there (`t` itself, past the prompt's end). This module
computes those points at compile time (the bounds are known) so that the pass can mask
an index there, or keep a user function in its loop.
"""

from __future__ import annotations

import numpy as np

from tempo.core import ops
from tempo.core.index_expr import IndexExpr, Slice, Symbol
from tempo.core.sdg import SDG, Edge
from tempo.schedule.domains import pure


class LoopPoints:
    """Per op over `d` (of size `size`): the points of `d` the loop runs it at, as a
    bool array, or None when that set depends on another loop variable (an edge
    condition or index over it) and so is not a set of points of `d` alone."""

    def __init__(self, sdg: SDG, d: Symbol, size: int) -> None:
        self.sdg, self.d, self.size = sdg, d, size
        self._restricted: set[int] = set()
        self._demand: set[int] = set()
        for op in reversed(list(sdg.topological())):  # readers first
            i, outs = op.op_id, sdg.out_edges.get(op.op_id, [])
            if not outs or isinstance(op, ops.MergeOp | ops.SinkUDFOp | ops.BarrierOp) \
                    or sdg.is_kept(i):
                continue
            if all(isinstance(sdg.ops[e.sink], ops.MergeOp) or e.sink in self._restricted
                   for e in outs):
                self._restricted.add(i)
                self._demand.add(i)
            elif pure(op):
                self._demand.add(i)
        self._points: dict[int, np.ndarray | None] = {}

    def restricted(self, i: int) -> bool:
        """Whether the scheduler runs `i` only where recurrence branches take it (an op
        with effects runs there only when it feeds branches alone:
        `schedule.domains._restrict_to_demand`)."""
        return i in self._restricted

    def points(self, i: int) -> np.ndarray | None:
        """The points of `d` the loop runs `i` at: where its readers need it (the
        scheduler's demand rule), all of them for an op with effects that is not
        `restricted`. An op without effects whose points are not a set of points of `d`
        alone counts as running at all of them (its batched form then computes every
        point, as the loop did before it ran ops on demand only)."""
        stack = [i]
        while stack:  # readers before the op (restricted chains can be long)
            j = stack[-1]
            if j in self._points:
                stack.pop()
                continue
            if j not in self._demand or self.d not in self.sdg.ops[j].domain:
                self._points[j] = np.ones(self.size, dtype=bool)  # (without d: it runs)
                stack.pop()
                continue
            todo = [e.sink for e in self.sdg.out_edges.get(j, [])
                     if e.sink not in self._points
                     and not isinstance(self.sdg.ops[e.sink], ops.MergeOp)]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            got = self._from_readers(j)
            if got is None and not self.restricted(j):
                got = np.ones(self.size, dtype=bool)
            self._points[j] = got
        return self._points[i]

    def _from_readers(self, i: int) -> np.ndarray | None:
        got = np.zeros(self.size, dtype=bool)
        for e in self.sdg.out_edges.get(i, []):
            sink = self.sdg.ops[e.sink]
            at = np.ones(self.size, dtype=bool) if isinstance(sink, ops.MergeOp) \
                else self._points[e.sink]
            if at is None or not self._mark(e, at if self.d in sink.domain else None, got):
                return None
        return got

    def _mark(self, e: Edge, at: np.ndarray | None, got: np.ndarray) -> bool:
        """Marks in `got` the points of `d` that read `e` takes at the reader's points
        `at` (None: the reader has no `d`). False when that is not a set of points of `d`
        alone: the condition or the `d` index uses another variable, or another index
        is neither that dim's own variable nor fixed (a point or a slice over bounds:
        the same points of that dim at every reader point; another variable there makes
        the read skip some points of that dim). A condition over other dims only leaves
        the same points of `d` wherever it holds (the batched op keeps those dims; the
        scheduler restricts it along them)."""
        src = self.sdg.ops[e.src.op_id]
        pos = src.domain.find_variable_index(self.d)
        m = e.expr[pos]
        for k, (v, x) in enumerate(zip(src.domain.variables, e.expr)):
            if k != pos and x.vars_used() and not (isinstance(x, Symbol) and x.name == v.name):
                return False
        allowed = {self.d.name} if at is not None else set()
        cond = e.cond
        if cond is not None and self.d.name not in {v.name for v in cond.vars_used()}:
            cond = None  # over the other dims only: the same points of d wherever it holds
        used = {v.name for v in m.vars_used()}
        if cond is not None:
            used |= {v.name for v in cond.vars_used()}
        if used - allowed:
            return False
        if at is not None and cond is None and isinstance(m, Symbol) and m.name == self.d.name:
            got |= at  # the reader's own point
            return True
        for p in (range(self.size) if at is not None else (None,)):
            if at is not None and not at[p]:
                continue
            values = dict(self.sdg.bound_defs) if p is None else {**self.sdg.bound_defs,
                                                                   self.d: p}
            span = _span(m, cond, values)
            if span is False:
                return False
            if isinstance(span, tuple):
                got[max(span[0], 0):max(min(span[1], self.size), 0)] = True
        return True


def _span(m: IndexExpr, cond: IndexExpr | None, values: dict[Symbol, int]
          ) -> tuple[int, int] | None | bool:
    """The points `m` reads at `values` as `(lo, hi)`, None when `cond` does not hold
    there, False when either does not evaluate to ints."""
    try:
        if cond is not None and not bool(cond.evaluate(values)):
            return None
        if isinstance(m, Slice):
            lo, hi = m.start.evaluate(values), m.stop.evaluate(values)
        else:
            lo = m.evaluate(values)
            hi = lo + 1 if isinstance(lo, int) else lo
    except Exception:  # noqa: BLE001 - an unbound symbol: not a set of points of d alone
        return False
    if not (isinstance(lo, int) and isinstance(hi, int)) or isinstance(lo, bool):
        return False
    return lo, hi
