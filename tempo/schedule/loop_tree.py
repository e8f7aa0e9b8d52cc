"""The loop nest of a program, read off its dependence structure (Allen–Kennedy style).

At each nesting level the ops still in scope form a graph of the dependences not carried by
the enclosing loops; its strongly connected components are ordered topologically and each
component that still has dimensions gets a loop over one of them, run forwards or
backwards as its dependences require. Adjacent components looping over the same dimension
in a compatible direction are fused into one loop (live ranges stay short, one Python loop
instead of many). The cost is linear in ops and edges per level, so it does not grow with
how often a structure repeats. isl then checks the result exactly (`placement.verify`); any
program this cannot order goes to isl's own scheduler instead.

A forward loop also takes a component that reads a bounded window ahead of the loop
(`x[t:t+n]`: an n-step target, the per-step gradient of a running sum) by shifting it:
its point p runs in iteration p + s, s the largest look-ahead, so what it reads is
already computed and what it alone keeps alive dies s iterations later (`shifts`).
Shifts are kept below half the loop's extent (beyond that the loop runs mostly guards).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tempo.core.index_expr import IntIndexValue, Slice, Symbol
from tempo.core.sdg import SDG, Edge

Signs = frozenset[str]  # possible signs of (sink - source) along one dimension: "-", "0", "+"
# signs(edge, var, outer): the signs along var over the pairs at distance 0 along `outer`
SignsFn = Callable[[Edge, str, tuple[str, ...]], Signs]
# distance(edge, var, outer): the least (sink - source) along var over those pairs (None:
# unbounded or unknown)
DistanceFn = Callable[[Edge, str, tuple[str, ...]], int | None]
ALL: Signs = frozenset("-0+")
FORWARD, BACKWARD = 1, -1


class Unorderable(Exception):
    """The structural scheduler cannot order these ops (a real same-point cycle, or a
    dependence pattern that needs a skewed or interchanged schedule)."""

    def __init__(self, ops: list[int]) -> None:
        super().__init__(f"cannot order ops {ops}")
        self.ops = ops


@dataclass
class Leaf:
    op_id: int


@dataclass
class LoopNode:
    var: str
    direction: int
    body: list[Leaf | LoopNode] = field(default_factory=list)


TreeNode = Leaf | LoopNode


def signs_of_interval(lo: float, hi: float) -> Signs:
    out = set()
    if lo < 0:
        out.add("-")
    if lo <= 0 <= hi:
        out.add("0")
    if hi > 0:
        out.add("+")
    return frozenset(out)


def syntactic_signs(v: Symbol, member: object) -> Signs | None:
    """Signs of (sink - source) along `v` for a read member, when its shape makes them
    obvious (`v`, `v - c`, slices with such ends); None means ask isl."""
    if isinstance(member, Symbol) and member.name == v.name:
        return frozenset("0")
    if isinstance(member, Slice):
        lo, hi = const_value(v - member.stop + 1), const_value(v - member.start)
        if lo is None and hi is None:
            return None
        return signs_of_interval(-float("inf") if lo is None else lo,
                                 float("inf") if hi is None else hi)
    assert isinstance(member, IntIndexValue), member  # a point read: an integer index
    c = const_value(v - member)
    return None if c is None else signs_of_interval(c, c)


def const_value(e: object) -> int | None:
    """The int an index expression is, whatever the point (None: it varies)."""
    val = e.try_eval() if hasattr(e, "try_eval") else None
    return val if isinstance(val, int) and not isinstance(val, bool) else None


def allowed_directions(signs: Signs) -> set[int]:
    """Directions a loop over the dimension may run so that the source comes first."""
    out = set()
    if "-" not in signs:
        out.add(FORWARD)
    if "+" not in signs:
        out.add(BACKWARD)
    return out


@dataclass
class _Comp:
    ops: list[int]
    var: str | None  # None: a leaf (no dimension left)
    dirs: set[int]


@dataclass
class _Open:
    """Components fused into one loop being built (empty: none open)."""

    comps: set[int] = field(default_factory=set)
    ops: set[int] = field(default_factory=set)
    var: str | None = None
    dirs: set[int] = field(default_factory=set)

    def open(self, k: int, c: _Comp) -> None:
        self.comps, self.ops, self.var, self.dirs = {k}, set(c.ops), c.var, set(c.dirs)

    def clear(self) -> None:
        self.comps, self.ops, self.var, self.dirs = set(), set(), None, set()


class LoopTreeBuilder:
    """Builds the loop tree; `signs(edge, var, outer)` gives the exact signs of an edge's
    distance along a dimension both of its ends have, over the pairs the enclosing loops
    `outer` do not separate (the caller answers from syntax or isl)."""

    def __init__(self, sdg: SDG, op_ids: Iterable[int], order: list[str],
                 signs: SignsFn, distance: DistanceFn | None = None) -> None:
        self.sdg = sdg
        self._distance = distance
        # op -> loop var -> s: the op's point p runs in iteration p + s of that loop
        self.shifts: dict[int, dict[str, int]] = {}
        self.extent = {b.name.lower(): v for b, v in sdg.bound_defs.items()
                       if isinstance(v, int)}
        self.ops = set(op_ids)
        self.order = order  # universe variable names, outermost first
        self.vars = {i: [v.name for v in sdg.ops[i].domain.variables] for i in self.ops}
        self._signs = signs
        self._cache: dict[tuple[int, str, tuple[str, ...]], Signs] = {}

    def signs(self, e: Edge, var: str, outer: tuple[str, ...] = ()) -> Signs:
        key = (id(e), var, outer)
        if key not in self._cache:
            self._cache[key] = self._signs(e, var, outer)
        return self._cache[key]

    def shift(self, op_id: int, var: str) -> int:
        return self.shifts.get(op_id, {}).get(var, 0)

    def live(self, e: Edge, outer: list[str]) -> bool:
        """Whether some pair of `e` is at distance 0 along every enclosing loop (ends
        shifted differently along one: kept, it may run in one iteration), outermost
        first: a loop that separates every pair (no 0 in its signs) settles it, whatever
        the shifts of the loops inside it (the step of a stencil u[b, t+1] = f(u[b-1, t],
        u[b+1, t]) shifted along b reads u at t - 1, never in its own iteration of t)."""
        for k, v in enumerate(outer):
            if self.shift(e.src.op_id, v) != self.shift(e.sink, v):
                return True
            if "0" not in self.signs(e, v, tuple(outer[:k])):
                return False
        return True

    def build(self) -> list[TreeNode]:
        return self._level(sorted(self.ops), [])

    # ------------------------------------------------------------------ one level
    def _edges(self, scope: set[int], outer: list[str]) -> list[Edge]:
        """Edges inside `scope` that may still have distance 0 along every outer loop."""
        out = []
        for sink in scope:
            for e in self.sdg.in_edges[sink]:
                if e.src.op_id in scope and self.live(e, outer):
                    out.append(e)
        return out

    def _level(self, op_ids: list[int], outer: list[str]) -> list[TreeNode]:
        scope = set(op_ids)
        edges = self._edges(scope, outer)
        comps = self._components(op_ids, edges, outer)
        comp_of = {o: k for k, c in enumerate(comps) for o in c.ops}
        preds: dict[int, set[int]] = {k: set() for k in range(len(comps))}
        into: dict[int, list[Edge]] = {k: [] for k in range(len(comps))}
        for e in edges:
            a, b = comp_of[e.src.op_id], comp_of[e.sink]
            if a != b:
                preds[b].add(a)
                into[b].append(e)
        succs: dict[int, set[int]] = {k: set() for k in preds}
        for b, ps in preds.items():
            for a in ps:
                succs[a].add(b)
        indeg = {k: len(ps) for k, ps in preds.items()}
        first = {k: c.ops[0] for k, c in enumerate(comps)}
        leaves: list[tuple[int, int]] = []  # heap of ready leaf components by first op
        loops: list[int] = []  # ready loop components, by first op
        out: list[TreeNode] = []
        main = _Open()  # the open loop
        side = _Open()  # loop components hoisted before it, fused with each other
        blocked: list[int] = []  # ready leaves that read the open loop
        side_blocked: list[int] = []  # ready leaves that read the hoisted loop

        def make_ready(k: int) -> None:
            if comps[k].var is None:
                heapq.heappush(leaves, (first[k], k))
            else:
                bisect.insort(loops, k, key=lambda j: first[j])

        def emit(k: int) -> None:
            for s in succs[k]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    make_ready(s)

        def join(g: _Open, k: int, pick: tuple[int, set[int], int] | None = None) -> None:
            if pick is None:
                g.open(k, comps[k])
            else:
                assert g.var is not None
                _, g.dirs, by = pick
                if by:
                    for o in comps[k].ops:
                        self.shifts.setdefault(o, {})[g.var] = by
                g.comps.add(k)
                g.ops.update(comps[k].ops)
            emit(k)

        def flush(g: _Open, waiting: list[int]) -> None:
            out.append(self._close(g, outer))
            for k in waiting:
                heapq.heappush(leaves, (first[k], k))
            waiting.clear()

        def joinable(g: _Open, among: list[int]) -> tuple[int, set[int], int] | None:
            if not g.comps:
                return None
            assert g.var is not None
            return self._compatible(among, comps, into, g.ops, g.var, g.dirs, tuple(outer))

        for k in sorted(indeg, key=lambda j: first[j]):
            if indeg[k] == 0:
                make_ready(k)
        while leaves or loops or main.comps:
            if not main.comps:
                if leaves:
                    k = heapq.heappop(leaves)[1]
                    out.append(Leaf(comps[k].ops[0]))
                    emit(k)
                else:
                    join(main, loops.pop(0))
                continue
            pick = joinable(main, loops)
            if pick is not None:
                loops.remove(pick[0])
                join(main, pick[0], pick)
                continue
            # Anything ready that does not read the open loop can run before it: hoisting
            # it keeps the loop open for the components it unblocks. Hoisted loops over
            # one dim fuse with each other the same way (a chain of per-block stages
            # becomes one loop), and leaves that read them wait until they close.
            hoisted = None
            while leaves:
                k = heapq.heappop(leaves)[1]
                if preds[k] & main.comps:
                    blocked.append(k)
                elif preds[k] & side.comps:
                    side_blocked.append(k)
                else:
                    hoisted = k
                    break
            if hoisted is not None:
                out.append(Leaf(comps[hoisted].ops[0]))
                emit(hoisted)
                continue
            free = [k for k in loops if not preds[k] & main.comps]
            pick = joinable(side, free)
            if pick is not None:
                loops.remove(pick[0])
                join(side, pick[0], pick)
            elif side.comps:
                flush(side, side_blocked)
            elif free:
                loops.remove(free[0])
                join(side, free[0])
            else:
                flush(main, blocked)
        if any(indeg.values()):
            raise Unorderable(sorted(o for k, n in indeg.items() if n for o in comps[k].ops))
        return out

    def _close(self, g: _Open, outer: list[str]) -> LoopNode:
        """The loop of an open group (emptied): its body is the next level down."""
        assert g.var is not None  # an open group is a loop: it has a dimension
        d = FORWARD if FORWARD in g.dirs else BACKWARD
        node = LoopNode(g.var, d, self._level(sorted(g.ops), [*outer, g.var]))
        g.clear()
        return node

    def _compatible(self, loops: list[int], comps: list[_Comp], into: dict[int, list[Edge]],
                    group_ops: set[int], var: str, dirs: set[int],
                    outer: tuple[str, ...]) -> tuple[int, set[int], int] | None:
        """The first ready component that can join the open loop, the directions the
        loop may then still run in and the shift the component runs at."""
        for k in loops:
            c = comps[k]
            if c.var != var:
                continue
            ok = dirs & c.dirs
            reads = [e for e in into[k] if e.src.op_id in group_ops]
            shifted = any(self.shift(e.src.op_id, var) for e in reads)
            if not shifted:
                for e in reads:
                    ok &= allowed_directions(self.signs(e, var, outer))
                if ok:
                    return k, ok, 0
            if FORWARD in dirs & c.dirs:
                by = self._shift_needed(reads, var, outer)
                if by is not None:
                    return k, {FORWARD}, by
        return None

    def _shift_needed(self, reads: list[Edge], var: str, outer: tuple[str, ...]) -> int | None:
        """The least shift making every read of the open loop go forward in time, when
        it is below half the loop's extent (None: none, or too large)."""
        if self._distance is None:
            return None
        by = 0
        for e in reads:
            dist = self._distance(e, var, outer)
            if dist is None:
                return None
            by = max(by, self.shift(e.src.op_id, var) - dist)
        extent = self.extent.get(var.lower())
        return by if extent is not None and 2 * by < extent else None

    def _components(self, op_ids: list[int], edges: list[Edge],
                    outer: list[str]) -> list[_Comp]:
        succ: dict[int, list[int]] = {o: [] for o in op_ids}
        self_loop: set[int] = set()
        for e in edges:
            if e.src.op_id == e.sink:
                self_loop.add(e.sink)
            else:
                succ[e.src.op_id].append(e.sink)
        comps = []
        for scc in strongly_connected(op_ids, succ):
            members = sorted(scc)
            cyclic = len(members) > 1 or members[0] in self_loop
            free = [v for v in self.order
                    if v not in outer and all(v in self.vars[o] for o in members)]
            if not cyclic and len(self.vars[members[0]]) == len(outer):
                comps.append(_Comp(members, None, set()))
                continue
            if not free:
                raise Unorderable(members)
            if not cyclic:
                comps.append(_Comp(members, free[0], {FORWARD, BACKWARD}))
                continue
            inside = set(members)
            chosen = None
            for v in free:
                dirs = {FORWARD, BACKWARD}
                for o in members:
                    for e in self.sdg.in_edges[o]:
                        if e.src.op_id in inside and self.live(e, outer):
                            dirs &= allowed_directions(self.signs(e, v, tuple(outer)))
                if dirs:
                    chosen = _Comp(members, v, dirs)
                    break
            if chosen is None:
                raise Unorderable(members)
            comps.append(chosen)
        return comps


def strongly_connected(nodes: list[int], succ: dict[int, list[int]]) -> list[list[int]]:
    """Tarjan's algorithm without recursion (programs have thousands of ops)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            recurse = False
            children = succ[v]
            while i < len(children):
                w = children[i]
                i += 1
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return out
