"""Which tensors the generated function keeps in Python locals instead of stores.

A point that is written, read only at that same point by ops later in the same statement
list, and freed at the end of that list, never needs a store: a local variable holds it
(one STORE_FAST instead of a tuple key, a dict write, a dict read per reader and a
`pop`). This is ARCHITECTURE §5 step 7's "no store (consumed immediately)", decided on
the schedule tree because only the schedule says where the last reader and the free are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from tempo.core import ops
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.schedule.tree import Exec, Free, If, Loop, Node, Seq, While

Path = tuple[tuple[int, int], ...]
"""Where a node sits: (id of each enclosing Seq, index of the child) from the root."""


@dataclass
class _Sites:
    execs: dict[int, list[tuple[Path, Exec]]] = field(default_factory=dict)
    frees: dict[TensorId, list[tuple[Path, Free]]] = field(default_factory=dict)


def _walk(node: Node, path: Path, sites: _Sites) -> None:
    if isinstance(node, Seq):
        for k, c in enumerate(node.children):
            _walk(c, path + ((id(node), k),), sites)
    elif isinstance(node, Loop | While):
        _walk(node.body, path, sites)
    elif isinstance(node, If):
        _walk(node.then, path, sites)
        if node.else_ is not None:
            _walk(node.else_, path, sites)
    elif isinstance(node, Exec):
        sites.execs.setdefault(node.op_id, []).append((path, node))
    elif isinstance(node, Free):
        sites.frees.setdefault(node.tensor, []).append((path, node))


def _between(reader: Path, prod: Path, free: Path) -> bool:
    """`reader` lies inside a child of the producer's statement list, strictly after the
    producer and before the free (nested ifs and loops included)."""
    n = len(prod)
    if len(reader) < n or reader[: n - 1] != prod[: n - 1]:
        return False
    seq, k = reader[n - 1]
    return seq == prod[-1][0] and prod[-1][1] < k < free[-1][1]


def transient_tensors(
    tree: Node,
    sdg: SDG,
    candidates: set[TensorId],
    exec_key: Callable[[int, tuple[str, ...]], str],
    read_key: Callable[[Edge, tuple[str, ...]], str | None],
) -> set[TensorId]:
    """The candidates that can live in locals. `exec_key(op_id, point)` renders the key of
    a point; `read_key(edge, reader_point)` the key the edge reads there (None for a slice
    read). Tensors the user reads after the run are never candidates."""
    sites = _Sites()
    _walk(tree, (), sites)
    out: set[TensorId] = set()
    for tid in candidates:
        prods = sites.execs.get(tid.op_id, [])
        frees = sites.frees.get(tid, [])
        if len(prods) != 1 or len(frees) != 1:
            continue
        (ppath, pnode), (fpath, fnode) = prods[0], frees[0]
        if len(fpath) != len(ppath) or fpath[:-1] != ppath[:-1] or fpath[-1][1] <= ppath[-1][1]:
            continue
        key = exec_key(tid.op_id, pnode.point)
        if exec_key(tid.op_id, fnode.point) != key:
            continue
        if all(_read_ok(e, sites, ppath, fpath, key, read_key) for e in sdg.readers(tid)):
            out.add(tid)
    return out


# ---------------------------------------------------------------- one-slot locals
Step = tuple[str, int, int]
"""One step down the tree: ("S", id of a Seq, child index) or ("I", id of an If, 0 for its
`then`, 1 for its `else`)."""


@dataclass
class _Site:
    path: tuple[Step, ...]
    node: Exec | Free
    loop_at: int  # len(path) where the innermost enclosing loop's body starts
    counters: tuple[str, ...]  # of the enclosing loops
    eqs: dict[str, str]  # counters the enclosing ifs pin to constants (`d1 == 4`)
    loop: Loop | While | None  # the innermost enclosing loop
    ifs: tuple[tuple[str, int], ...] = ()  # enclosing ifs: (condition, branch taken)


_EQ = re.compile(r"^(\w+) == (-?\d+)$")


def _pinned(cond: str) -> dict[str, str]:
    """`(a == 1)` or `((a == 1) and (b == 2))` -> {a: 1, b: 2}; anything else -> {}."""
    out = {}
    body = cond[1:-1] if cond.startswith("((") else cond
    for part in body.split(" and "):
        m = _EQ.match(part.strip().removeprefix("(").removesuffix(")"))
        if m is None:
            return {}
        out[m.group(1)] = m.group(2)
    return out


def _sites(node: Node, path: tuple[Step, ...], at: _Site,
           out: dict[object, list[_Site]]) -> None:
    """Every Exec (by op id) and Free (by tensor) with where it sits; `at` holds the
    enclosing loops' and ifs' part (its path and node are unused)."""
    if isinstance(node, Seq):
        for k, c in enumerate(node.children):
            _sites(c, (*path, ("S", id(node), k)), at, out)
    elif isinstance(node, Loop | While):
        inner = _Site(path, at.node, len(path), (*at.counters, node.counter), at.eqs, node,
                      at.ifs)
        _sites(node.body, path, inner, out)
    elif isinstance(node, If):
        then = _Site(path, at.node, at.loop_at, at.counters, {**at.eqs, **_pinned(node.cond)},
                     at.loop, (*at.ifs, (node.cond, 0)))
        _sites(node.then, (*path, ("I", id(node), 0)), then, out)
        if node.else_ is not None:
            other = _Site(path, at.node, at.loop_at, at.counters, at.eqs, at.loop,
                          (*at.ifs, (node.cond, 1)))
            _sites(node.else_, (*path, ("I", id(node), 1)), other, out)
    elif isinstance(node, Exec | Free):
        site = _Site(path, node, at.loop_at, at.counters, at.eqs, at.loop, at.ifs)
        out.setdefault(node.op_id if isinstance(node, Exec) else node.tensor, []).append(site)


def _all_sites(tree: Node) -> dict[object, list[_Site]]:
    out: dict[object, list[_Site]] = {}
    _sites(tree, (), _Site((), Free(TensorId(-1, 0), ()), 0, (), {}, None), out)
    return out


def _after(x: _Site, p: _Site) -> bool:
    """`x` runs after `p` in the same iteration of `p`'s innermost loop (and of every
    loop around it): inside that loop's body, later in a statement list both are in
    (deeper loops and ifs on `x`'s side are fine; the other branch of an if is not)."""
    m = p.loop_at
    if x.path[:m] != p.path[:m]:
        return False
    for a, b in zip(x.path[m:], p.path[m:]):
        if a != b:
            return a[0] == "S" and a[1] == b[1] and a[2] > b[2]
    return False


def _subst(key: str, eqs: dict[str, str]) -> str:
    """`key` with the pinned counters replaced by their values, a lone name or number in
    parentheses unwrapped and doubled parentheses made single (`(d0, (4), )` and
    `(d0, d1, )` at d1 == 4 read alike, as do `((d0 - 1))` and `(d0 - 1)`)."""
    for var, val in eqs.items():
        key = re.sub(rf"\b{var}\b", val, key)
    key = re.sub(r"\((-?\w+)\)", r"\1", key)
    while True:
        new = re.sub(r"\(\(([^()]*)\)\)", r"(\1)", key)
        if new == key:
            return key
        key = new


def one_slot_tensors(
    tree: Node,
    sdg: SDG,
    candidates: set[TensorId],
    exec_key: Callable[[int, tuple[str, ...]], str],
    read_key: Callable[[Edge, tuple[str, ...]], str | None],
    carried: bool = False,
) -> dict[TensorId, bool]:
    """The candidates a single local can hold, each with whether its one free runs exactly
    when its write does (under the same ifs, not in a deeper loop: a tracked run can
    charge it at the write and credit it at the free): made at one place, and every read and
    free runs after the write in the same loop iteration and names the point just made
    (frees under `if d == c` may name it with `c` for `d`). Then at most one point is
    alive at a time and each access is to it, so a local — overwritten by the next write,
    set to None by a free — behaves exactly as the store. Unlike `transient_tensors`, the
    write may sit in an if and the reads and frees anywhere later in the iteration, so
    a free may run where the write did not (a tracked run's charges need more). The
    write's point names every enclosing loop's counter, so a read in a later iteration
    can never want an older write's point.

    With `carried` (an untracked run: nothing charges the local), a recurrence carried by
    the write's loop qualifies too (the Adam state `m[i] = b m[i-1] + g[i]`): reads and
    frees of the previous iteration's point that run before the write in its iteration
    (the local still holds that point then)."""
    sites = _all_sites(tree)
    out: dict[TensorId, bool] = {}
    for tid in candidates:
        prods, frees = sites.get(tid.op_id, []), sites.get(tid, [])
        if len(prods) != 1 or not frees:
            continue
        p = prods[0]
        key = exec_key(tid.op_id, p.node.point)
        if not all(re.search(rf"\b{c}\b", key) for c in p.counters):
            continue  # each write names a point of its own iteration: no older one is read
        prev = _previous(p, key) if carried else None
        if not all(_names_it(f, exec_key(tid.op_id, f.node.point), p, key)
                   or _names_prev(f, exec_key(tid.op_id, f.node.point), p, prev)
                   for f in frees):
            continue
        if all(readers and all(_names_it(r, got, p, key) or _names_prev(r, got, p, prev)
                               for r in readers for got in [read_key(e, r.node.point)])
               for e in sdg.readers(tid) for readers in [sites.get(e.sink, [])]):
            f = frees[0]
            out[tid] = len(frees) == 1 and f.loop is p.loop and f.ifs == p.ifs
    return out


def _previous(p: _Site, key: str) -> str | None:
    """The point write `p` (at `key`) made in the previous iteration of its innermost
    loop, if it runs in every iteration of that loop (no if around it inside it)."""
    loop = p.loop
    if not isinstance(loop, Loop) or loop.step not in (1, -1) or any(
            step[0] == "I" for step in p.path[p.loop_at:]):
        return None
    c = loop.counter
    return re.sub(rf"\b{c}\b", f"({c} - 1)" if loop.step == 1 else f"({c} + 1)", key)


def _names_prev(x: _Site, got: str | None, p: _Site, prev: str | None) -> bool:
    """Access `x` runs before write `p` in the same iteration of `p`'s loop and names
    the point `p` made in the iteration before (`prev`)."""
    return prev is not None and got is not None and x.loop is p.loop and _after(p, x) \
        and _subst(got, x.eqs) == _subst(prev, x.eqs)


def _names_it(x: _Site, got: str | None, p: _Site, key: str) -> bool:
    """Access `x` (naming point `got`) runs after write `p` and names its point `key`."""
    return got is not None and _after(x, p) and _subst(got, x.eqs) == _subst(key, x.eqs)


def _read_ok(e: Edge, sites: _Sites, ppath: Path, fpath: Path, key: str,
             read_key: Callable[[Edge, tuple[str, ...]], str | None]) -> bool:
    """Every execution of the reader reads the produced point, between write and free."""
    execs = sites.execs.get(e.sink, [])
    return bool(execs) and all(
        _between(path, ppath, fpath) and read_key(e, node.point) == key for path, node in execs
    )


@dataclass
class WriteThrough:
    """Block-stored points read back where they are written: the producer also binds the
    value to a local, the `reads` (id of the reading Exec, input index) use the local
    instead of a store lookup, and the local is dropped after child `drop[1]` of the Seq
    `drop[0]` (by id), its last such reader."""

    reads: set[tuple[int, int]] = field(default_factory=set)
    drops: dict[tuple[int, int], list[TensorId]] = field(default_factory=dict)
    tensors: set[TensorId] = field(default_factory=set)


def write_through(
    tree: Node,
    sdg: SDG,
    blocked: set[TensorId],
    exec_key: Callable[[int, tuple[str, ...]], str],
    read_key: Callable[[Edge, tuple[str, ...]], str | None],
    carried: bool = False,
) -> WriteThrough:
    """The block-stored tensors (made at one place; by a merge only with `carried`) whose
    point is read
    at that point later in the producer's statement list: each such read can take the
    value just computed (equal to what the store copied) instead of a view from the store.
    Frees do not matter: the local holds its own value. With `carried` (an untracked run:
    a local kept longer is charged to nobody), reads of the previous iteration's point
    (`x[t-1]` before `x[t]` is made, in the loop that makes it) take the local too, which
    then lives until the next write overwrites it."""
    sites = _Sites()
    _walk(tree, (), sites)
    where = _all_sites(tree) if carried else {}
    out = WriteThrough()
    for tid in blocked:
        op = sdg.ops[tid.op_id]
        prods = sites.execs.get(tid.op_id, [])
        if (isinstance(op, ops.MergeOp) and not carried) or len(prods) != 1 or not prods[0][0]:
            continue  # (a tracked run charges a merge's local as its branch's: not here)
        ppath, pnode = prods[0]
        key = exec_key(tid.op_id, pnode.point)
        last = -1
        for e in sdg.readers(tid):
            for path, node in sites.execs.get(e.sink, []):
                if _between(path, ppath, ((0, 1 << 30),)) and read_key(e, node.point) == key:
                    out.reads.add((id(node), e.sink_in))
                    last = max(last, path[len(ppath) - 1][1])
        back = _carried_reads(tid, sdg, where, exec_key, read_key) if carried else set()
        if back - out.reads:
            out.reads |= back
            out.tensors.add(tid)  # no drop: a later iteration or statement reads it
        elif last >= 0:
            out.tensors.add(tid)
            out.drops.setdefault((ppath[-1][0], last), []).append(tid)
    return out


def _carried_reads(tid: TensorId, sdg: SDG, where: dict[object, list[_Site]],
                   exec_key: Callable[[int, tuple[str, ...]], str],
                   read_key: Callable[[Edge, tuple[str, ...]], str | None]
                   ) -> set[tuple[int, int]]:
    """(reading Exec id, input) of the reads that can take the local `tid`'s producer
    keeps: of its point later in the same iteration (under any ifs), and of the point
    it made in the previous iteration of its innermost loop, read before it in that
    loop's body. The point names every enclosing counter, so no read wants an older
    write's point; for the previous iteration's, the producer runs in every iteration
    (no if around it inside the loop), and a first iteration's read of a point before
    the loop's start cannot happen in a valid schedule (no such point is ever made)."""
    prods = where.get(tid.op_id, [])
    if len(prods) != 1:
        return set()
    p = prods[0]
    key = exec_key(tid.op_id, p.node.point)
    if not all(re.search(rf"\b{c}\b", key) for c in p.counters):
        return set()
    loop, prev = p.loop, None
    if isinstance(loop, Loop) and loop.step in (1, -1) and not any(
            step[0] == "I" for step in p.path[p.loop_at:]):
        c = loop.counter
        prev = re.sub(rf"\b{c}\b", f"({c} - 1)" if loop.step == 1 else f"({c} + 1)", key)
    out = set()
    for e in sdg.readers(tid):
        for r in where.get(e.sink, []):
            got = read_key(e, r.node.point)
            if _names_it(r, got, p, key) or (
                    prev is not None and got is not None and r.loop is loop and _after(p, r)
                    and _subst(got, r.eqs) == _subst(prev, r.eqs)):
                out.add((id(r.node), e.sink_in))
    return out
