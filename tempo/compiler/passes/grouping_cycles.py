"""Would joining two groups into one region make the region wait on itself? Only if a path
leaves one group and comes back to the other *at the same point*: the region then reads,
at point p, a value that needs its own output at p.

The test sums each read's distance (sink point − source point, an interval per loop
variable) along paths, so a recurrence's read of the previous step (`s[t-1]`, distance 1)
breaks a cycle even in programs that also read the next step elsewhere (GAE's `adv[t+1]`),
where a per-edge test must assume any read may be undone. A read between ops that do not
share a variable may land anywhere along it. Paths through a group enter at any member and
leave from any member (a region runs all its members at once).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator

from tempo.core.sdg import SDG, Edge
from tempo.schedule.grouping import INF, _distance

Interval = dict[str, tuple[float, float]]


def edge_distance(sdg: SDG, e: Edge, names: tuple[str, ...]) -> Interval:
    """sink − source along each of `names` for one read."""
    src, sink = sdg.ops[e.src.op_id], sdg.ops[e.sink]
    at = {v.name: m for v, m in zip(src.domain.variables, e.expr)}
    out: Interval = {}
    sink_vars = {v.name: v for v in sink.domain.variables}
    for n in names:
        if n in at and n in sink_vars:
            out[n] = _distance(sink_vars[n], at[n])
        else:
            out[n] = (-INF, INF)
    return out


def _add(a: Interval, b: Interval) -> Interval:
    return {n: (a[n][0] + b[n][0], a[n][1] + b[n][1]) for n in a}


def _within(a: Interval, b: Interval) -> bool:
    return all(b[n][0] <= a[n][0] and a[n][1] <= b[n][1] for n in a)


def _hull(old: Interval, new: Interval, jump: bool) -> Interval:
    """The smallest box holding both; with `jump`, a bound that grew goes to infinity."""
    out = {}
    for n in old:
        lo = min(old[n][0], new[n][0])
        hi = max(old[n][1], new[n][1])
        if jump:
            lo = lo if lo == old[n][0] else -INF
            hi = hi if hi == old[n][1] else INF
        out[n] = (lo, hi)
    return out


class Work:
    """The search effort one grouping pass may spend on these questions, shared by all
    of them (ops visited by `_reach`, path states by `_arrivals`). A question asked after
    it is spent is answered "may return" / "not orderable": the join is refused, which is
    always safe (fewer, smaller regions), so a program with many risky joins (a Llama
    fine-tune over (i, layer, t): 700k states, 9 s of a 10 s compile) compiles in seconds
    instead of fusing a little more."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit
        self.refused = 0  # questions answered unsearched, the budget spent

    @property
    def spent(self) -> bool:
        return self.left <= 0


KEEP = 4
"""Distinct intervals kept per op; past that a new one joins the last by their hull, and
after HULLS hulls by widening (paths around a recurrence add one step per turn: the
search must end)."""
HULLS = 8
BUDGET = 20_000
"""Search states per question; past it the answer is "may return" (no join)."""


def _reach(sdg: SDG, start: Iterable[int], members_of: Callable[[int], list[int]],
           forward: bool, effort: Work, keep: Callable[[Edge], bool] | None = None
           ) -> set[int]:
    """Ops reachable from `start` (forward), or reaching it (backward), groups whole;
    with `keep`, along the reads it keeps only."""
    out: set[int] = set()
    work = list(start)
    while work:
        x = work.pop()
        if x in out:
            continue  # its whole group was added with it
        for m in members_of(x):
            out.add(m)
            es = sdg.out_edges.get(m, ()) if forward else sdg.in_edges.get(m, ())
            work.extend(y for e in es if keep is None or keep(e)
                        if (y := e.sink if forward else e.src.op_id) not in out)
    effort.left -= len(out)
    return out


def _one_way(sdg: SDG, group: list[int], members_of: Callable[[int], list[int]],
             names: tuple[str, ...], dist: Callable[[Edge], Interval], effort: Work) -> bool:
    """A quick sufficient test for `orderable`: along each variable in turn, the reads on
    paths from the group back to it all go one way. A path whose first variable that
    moves is `n` reads at 0 along the variables before it, so once one goes one way, only
    reads that may be 0 along it are followed for the next."""
    inside = set(group)
    kept: list[str] = []

    def keep(e: Edge) -> bool:
        return all(dist(e)[k][0] <= 0 <= dist(e)[k][1] for k in kept)

    for n in names:
        first = [e.sink for m in group for e in sdg.out_edges.get(m, ())
                 if e.sink not in inside and keep(e)]
        on = _reach(sdg, first, members_of, True, effort, keep) & _reach(
            sdg, inside, members_of, False, effort, keep)
        if not on:
            return True
        on |= inside
        ivs = [dist(e)[n] for x in on for e in sdg.out_edges.get(x, ())
               if e.sink in on and not (x in inside and e.sink in inside) and keep(e)]
        if any(lo < 0 for lo, _ in ivs) and any(hi > 0 for _, hi in ivs):
            return False
        kept.append(n)
    return True


def returns(sdg: SDG, start: Iterable[int], goal: set[int], skip: set[int],
            members_of: Callable[[int], list[int]], names: tuple[str, ...],
            dist: Callable[[Edge], Interval], effort: Work) -> bool:
    """Is there a path from the ops `start` through at least one op outside `skip` to an op
    of `goal`, summing to distance 0 along every variable of `names`? (True, unsearched,
    once `effort` is spent.)"""
    if effort.spent:
        effort.refused += 1
        return True
    for iv in _arrivals(sdg, start, goal, skip, members_of, names, dist, effort,
                        settled=False):
        if iv is None or all(lo <= 0 <= hi for lo, hi in iv.values()):
            return True
    return False


def orderable(sdg: SDG, group: list[int], members_of: Callable[[int], list[int]],
              names: tuple[str, ...], dist: Callable[[Edge], Interval], effort: Work) -> bool:
    """Can the points of a region holding `group` be ordered? Each path from the group
    through other ops back to it makes a point need another: the first variable (in
    domain order) along which the path's distance is not 0 and its sign say which way
    that loop must run. A region whose paths ask for both ways along one variable (BPTT:
    the forward step reads h at t - 1, the backward step the gradient at t + 1) waits on
    itself; so does one with a path that may sum to 0."""
    if effort.spent:
        effort.refused += 1
        return False
    if _one_way(sdg, group, members_of, names, dist, effort):
        return True
    inside = set(group)
    ways: set[tuple[str, str]] = set()
    for iv in _arrivals(sdg, group, inside, inside, members_of, names, dist, effort,
                        settled=True):
        if iv is None:
            return False
        for n in names:
            lo, hi = iv[n]
            if hi > 0:
                ways.add((n, "+"))
            if lo < 0:
                ways.add((n, "-"))
            if not lo <= 0 <= hi:
                break
        else:
            return False  # may return to the same point
        if any((n, "+") in ways and (n, "-") in ways for n in names):
            return False
    return True


def _arrivals(sdg: SDG, start: Iterable[int], goal: set[int], skip: set[int],
              members_of: Callable[[int], list[int]], names: tuple[str, ...],
              dist: Callable[[Edge], Interval], effort: Work,
              settled: bool) -> Iterator[Interval | None]:
    """The distances (sink - source, summed) of paths from the ops `start` through at least
    one op outside `skip` to an op of `goal`; None when the search ran out of budget (any
    distance is then possible). Only ops on some path are searched; along a variable that
    no read among them goes back in (all distances ≥ 0, e.g. the iteration dim read at
    i-1), a path already ahead cannot return to 0: it is dropped, or with `settled`, when
    every earlier variable of `names` is 0 along every read (so that variable decides the
    path's direction for good), given as it is. Breadth first, so short paths (small
    distances) reach each op before pumped ones."""
    start = list(start)
    first = [e.sink for m in start for e in sdg.out_edges.get(m, ()) if e.sink not in skip]
    ahead = _reach(sdg, first, members_of, True, effort)
    if not ahead & goal:
        return
    on_path = (ahead & _reach(sdg, goal, members_of, False, effort)) | goal
    lows = {n: INF for n in names}
    highs = {n: -INF for n in names}
    for x in on_path:
        for e in sdg.out_edges.get(x, ()):
            if e.sink in on_path:
                for n, (lo, hi) in dist(e).items():
                    lows[n], highs[n] = min(lows[n], lo), max(highs[n], hi)

    def hopeless(iv: Interval) -> bool:
        for n in names:
            if (iv[n][0] > 0 and lows[n] >= 0) or (iv[n][1] < 0 and highs[n] <= 0):
                return True
            if settled and not lows[n] == highs[n] == 0:
                return False
        return False

    seen: dict[int, list[Interval]] = {}
    hulls: dict[int, int] = {}
    queue: deque[tuple[int, Interval]] = deque()
    for m in start:
        queue.extend((e.sink, dist(e)) for e in sdg.out_edges.get(m, ())
                     if e.sink not in skip and e.sink in on_path)
    steps = 0
    try:
        while queue:
            steps += 1
            if steps > BUDGET or steps > effort.left:
                yield None
                return
            x, iv = queue.popleft()
            if x in goal:
                yield iv
                continue
            if hopeless(iv):
                if settled:
                    yield iv
                continue
            rep = members_of(x)[0]
            known = seen.setdefault(rep, [])
            if any(_within(iv, k) for k in known):
                continue
            if len(known) >= KEEP:
                hulls[rep] = hulls.get(rep, 0) + 1
                iv = known[-1] = _hull(known[-1], iv, hulls[rep] > HULLS)
            else:
                known.append(iv)
            for m in members_of(x):
                for e in sdg.out_edges.get(m, ()):
                    if e.sink != m and e.sink in on_path:
                        queue.append((e.sink, _add(iv, dist(e))))
    finally:  # (the caller may stop at its first answer)
        effort.left -= steps
