"""Swap statements in the schedule (ARCHITECTURE §6): producer → offload → fetch → reader.

A stored point that is made in one stage of a loop body (the rollout loop over t) and read
again only in a later stage (the learner after it, or a loop running backwards over t)
sits idle on the device in between. For such tensors this pass adds to the schedule tree:

* `Offload` of each point after its last *near* use: at the end of the innermost loop
  iteration (in the producer's stage) that holds the producer and every near reader,
  delayed by as many iterations as near readers look back (`x[t-1]`, `x[t-w:t]`);
* `Fetch` of what each *far* reader reads, right before the read, and a prefetch of
  what it will read `ahead` iterations later, right after it (the transfer overlaps the
  rest of the iteration on a GPU, where copies are asynchronous).

Why on our schedule tree rather than as isl statements: the structural scheduler already
fixed the order (isl only checks it), so where an offload or fetch goes is a question about
that tree — which stage a reader sits in and which loop surrounds it — that a walk answers
in time linear in the tree, with the reads' own index expressions giving the points.
Asking isl to reschedule with O/F statements and proximity constraints would re-solve an
order we already have. Placement decides only *when*; correctness never depends on it: a
read of a point still on the host fetches it on demand, and under a device cap the
runtime offloads further points when the plan is not enough (runtime/swap.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tempo.core.index_expr import PY_GLOBALS, Slice
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.schedule.tree import Exec, Fetch, If, Loop, Node, Offload, Seq, While

Level = tuple[Seq, int]
"""A step of a node's path: the statement list it is in, and its position there."""

_FAR = 1 << 20  # a counter value far from every bound, to read index offsets


@dataclass
class _Site:
    """Where an Exec sits: its path of statement lists and the loops around each step."""

    node: Exec
    path: tuple[Level, ...]
    loops: tuple[tuple[int, Loop], ...]  # (path depth it encloses, loop), outermost first


def _sites(tree: Node) -> dict[int, list[_Site]]:
    out: dict[int, list[_Site]] = {}

    def walk(n: Node, path: tuple[Level, ...], loops: tuple[tuple[int, Loop], ...]) -> None:
        if isinstance(n, Seq):
            for k, c in enumerate(n.children):
                walk(c, (*path, (n, k)), loops)
        elif isinstance(n, Loop):
            walk(n.body, path, (*loops, (len(path), n)))
        elif isinstance(n, While):
            walk(n.body, path, loops)
        elif isinstance(n, If):
            walk(n.then, path, loops)
            if n.else_ is not None:
                walk(n.else_, path, loops)
        elif isinstance(n, Exec):
            out.setdefault(n.op_id, []).append(_Site(n, path, loops))

    walk(tree, (), ())
    return out


def _has_loop(n: Node) -> bool:
    if isinstance(n, Loop | While):
        return True
    if isinstance(n, Seq):
        return any(_has_loop(c) for c in n.children)
    if isinstance(n, If):
        return _has_loop(n.then) or (n.else_ is not None and _has_loop(n.else_))
    return False


class _Inserts:
    """Statements to add, collected first so that positions stay valid while placing."""

    def __init__(self) -> None:
        self.before: dict[tuple[int, int], list[Node]] = {}
        self.after: dict[tuple[int, int], list[Node]] = {}
        self.at_end: dict[int, list[Node]] = {}
        self.seqs: dict[int, Seq] = {}

    def add(self, where: dict, seq: Seq, key: object, node: Node) -> None:
        self.seqs[id(seq)] = seq
        where.setdefault(key, []).append(node)

    def apply(self) -> None:
        for sid, seq in self.seqs.items():
            out: list[Node] = []
            for k, c in enumerate(seq.children):
                out += self.before.get((sid, k), [])
                out.append(c)
                out += self.after.get((sid, k), [])
            seq.children = out + self.at_end.get(sid, [])


def place_swaps(tree: Node, sdg: SDG, candidates: Iterable[TensorId],
                bounds: dict[str, int], ahead: int) -> int:
    """Add offload and fetch statements for the `candidates` (tensors in swappable point
    stores) to `tree`, in place; prefetches run `ahead` iterations early (0: fetch at the
    read only). Returns how many tensors got swap statements."""
    sites = _sites(tree)
    ins = _Inserts()
    placed = 0
    for tid in candidates:
        prod = sites.get(tid.op_id, [])
        readers = [(e, s) for e in sdg.readers(tid) for s in sites.get(e.sink, [])]
        if len(prod) != 1 or not readers:
            continue
        placed += _place_one(tid, prod[0], readers, sdg, bounds, ahead, ins)
    ins.apply()
    return placed


def _common_depth(paths: list[tuple[Level, ...]]) -> int | None:
    """The depth of the deepest statement list holding every path (the LCA's level)."""
    depth = 0
    while all(len(p) > depth for p in paths) and len({id(p[depth][0]) for p in paths}) == 1:
        if len({p[depth][1] for p in paths}) > 1:
            return depth
        depth += 1
    return None  # all at one statement (nested differently below it): no stage apart


def _place_one(tid: TensorId, prod: _Site, readers: list[tuple[Edge, _Site]], sdg: SDG,
               bounds: dict[str, int], ahead: int, ins: _Inserts) -> int:
    """Swap statements for one tensor (1) or none (0): readers in the producer's stage
    (the child of the innermost statement list holding all uses) are near, readers in
    later children far; a gap with a loop in it is worth an offload and a fetch."""
    j = _common_depth([prod.path] + [s.path for _, s in readers])
    if j is None:
        return 0
    seq, kp = prod.path[j]
    near = [(e, s) for e, s in readers if s.path[j][1] == kp]
    far = [(e, s) for e, s in readers if s.path[j][1] > kp]
    if not far or any(s.path[j][1] < kp for _, s in readers):
        return 0  # read before it is made in this body (a loop-carried read): kept
    first_far = min(s.path[j][1] for _, s in far)
    if not any(_has_loop(c) for c in seq.children[kp:first_far]):
        return 0  # nothing long runs between the last near use and the first far one
    offload = _offload_site(tid, prod, near, sdg, bounds, j)
    if offload is None:
        return 0
    where, node = offload
    if where is None:
        ins.add(ins.after, seq, (id(seq), kp), node)
    else:
        ins.add(ins.at_end, where.body if isinstance(where.body, Seq) else _wrap(where),
                id(where.body), node)
    for e, s in far:
        _place_fetches(tid, e, s, sdg, ahead, j, ins)
    return 1


def _wrap(loop: Loop) -> Seq:
    loop.body = Seq([loop.body])
    return loop.body


def _offload_site(tid: TensorId, prod: _Site, near: list[tuple[Edge, _Site]], sdg: SDG,
                  bounds: dict[str, int], j: int) -> tuple[Loop | None, Offload] | None:
    """The loop at whose iteration end the point goes (None: after the producer's stage)
    and the offload statement; None if near reads look back by an unknown amount."""
    mine = [(d, lp) for d, lp in prod.loops if d > j]
    shared = [lp for d, lp in mine
              if all(any(lp is m for _, m in s.loops) for _, s in near)]
    if not shared:
        return None, Offload(tid, prod.node.point)
    loop = shared[-1]
    if loop.counter not in prod.node.point:
        return None
    lag = 0
    for e, s in near:
        got = _lag(e, s, sdg, loop, prod.node.point.index(loop.counter), bounds)
        if got is None:
            return None
        lag = max(lag, got)
    point = tuple(p if p != loop.counter else
                  (p if not lag else f"({p} - {lag * loop.step})") for p in prod.node.point)
    return loop, Offload(tid, point)


def _lag(e: Edge, s: _Site, sdg: SDG, loop: Loop, k: int,
         bounds: dict[str, int]) -> int | None:
    """How many iterations of `loop` after a point is made the reader `e` last reads it
    (0: in the iteration that made it); None if the read does not follow the counter."""
    op = sdg.ops[e.sink]
    if loop.counter not in s.node.point:
        return None
    env: dict[str, object] = {**PY_GLOBALS, **bounds}
    names = {}
    for v, p in zip(op.domain.variables, s.node.point):
        names[v.name] = f"({p})"
    m = e.expr[k]

    def at(c: int) -> list[int] | None:
        local = {**{p: 0 for p in s.node.point if p.isidentifier()}, loop.counter: c}
        try:
            if isinstance(m, Slice):
                lo, hi = m.bounds_py(names)
                return [int(eval(lo, env, local)), int(eval(hi, env, local)) - 1]
            return [int(eval(m.to_py(names), env, local))]
        except Exception:  # an index the counters alone do not give: no lag known
            return None

    a, b = at(_FAR), at(_FAR + 1)
    if a is None or b is None or [y - x for x, y in zip(a, b)] != [1] * len(a):
        return None  # the read does not move with the loop one point per iteration
    return max(0, max((_FAR - v) * loop.step for v in a))


def _place_fetches(tid: TensorId, e: Edge, s: _Site, sdg: SDG, ahead: int, j: int,
                   ins: _Inserts) -> None:
    """Fetch what the far read needs right before it and prefetch the read `ahead`
    iterations later of the innermost loop around the reader right after it; loops (of
    the reader's stage) whose counter the read does not use are left: the fetch goes
    before the outermost of them, once, with nothing to prefetch."""
    op = sdg.ops[e.sink]
    names = {v.name: f"({p})" for v, p in zip(op.domain.variables, s.node.point)}
    read = " ".join(m.to_py(names) if not isinstance(m, Slice) else " ".join(m.bounds_py(names))
                    for m in e.expr)
    edge = sdg.in_edges[e.sink].index(e)
    fetch = Fetch(tid, e.sink, edge, s.node.point)
    inner = [(d, lp) for d, lp in s.loops if d > j]
    k = len(inner)
    while k and not _uses(read, inner[k - 1][1].counter):
        k -= 1
    if k < len(inner):  # hoisted before the outermost loop the read does not vary in
        seq, pos = s.path[inner[k][0] - 1]
        ins.add(ins.before, seq, (id(seq), pos), fetch)
        return
    seq, pos = s.path[-1]
    ins.add(ins.before, seq, (id(seq), pos), fetch)
    if not ahead or not inner:
        return
    c, step = inner[-1][1].counter, inner[-1][1].step * ahead
    point = tuple(p if p != c else f"({c} + {step})" for p in s.node.point)
    ins.add(ins.after, seq, (id(seq), pos), Fetch(tid, e.sink, edge, point, ahead))


def _uses(code: str, name: str) -> bool:
    """Whether Python expression text `code` mentions the identifier `name`."""
    return re.search(rf"\b{re.escape(name)}\b", code) is not None
