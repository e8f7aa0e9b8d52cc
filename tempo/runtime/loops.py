"""Compiled loops (ARCHITECTURE §7): which iterations of a schedule loop can run as one
`jax.lax.scan`, decided on the schedule tree and checked point by point.

A candidate is an innermost `Loop` whose range and conditions depend only on its counter
and the program's bounds. Its iterations split into runs over which every condition in
the body has one value ("segments": a recurrence's first point, its steps, its last
point); each segment of at least `MIN_STEPS` iterations whose body is pure (Tempo ops and
fused regions: no UDF, no random draw, no barrier, no swap) and whose reads are exact is
planned as a scan. Every read of the body is classified by evaluating its key at every
iteration of the segment (an exhaustive check, not a guess):

* a value made earlier in the same iteration: a local of the step function;
* a value the body made `k` iterations ago (`x[t-1]`, `g[t+1]` in a backward loop, a
  fixed offset): a shift register of depth `k` in the carry, its first `k` entries read
  from the store at entry (made by the iterations before the segment);
* a value made outside the segment: loop-invariant (one input) or, if its point moves with
  the counter, the points stacked into the scan's `xs`;
* anything else (a slice of a value the body makes, a read whose offset varies, a key
  that cannot be compared) leaves the segment a Python loop, as it was.

Frees do not split segments (each free is placed at the iterations its conditions
select), a recurrence's first point (`h[0] = init`, a merge whose branch changes after
the first iterations) joins the scan as the carry's first value, and a run that cannot
scan whole is tried without its first or last iteration (a boundary read).

After the scan the stores hold what the Python loop would have left: the points no free
of the segment releases (stacked outputs, kept as one block by a jax block store, or the
last carries), and the points made before it that its frees release are popped.
Emission is in `loops_emit.py`, the jax runner in `loops_jax.py`.
"""

from __future__ import annotations

import builtins
import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tempo.core import ops
from tempo.core.index_expr import PY_GLOBALS, Slice
from tempo.core.sdg import Edge, TensorId
from tempo.runtime.loops_conds import UNKNOWN, compile3, evaluate3
from tempo.schedule.tree import Exec, Free, If, Loop, Node, Seq, walk

MIN_STEPS = 2
"""Shorter segments stay Python: a scan of one step only adds a dispatch."""

MAX_OUTER_POINTS = 256
"""A condition the inner counter alone does not decide is tried at up to this many points
of the enclosing counters (more: it stays undecided, and those iterations Python)."""

BUILTINS = frozenset(dir(builtins))
"""Names index expressions may call (`min`, `max`): known before the run."""

IMPURE = frozenset({"udf_source", "sink_udf", "map_udf", "barrier"})
"""Ops that call back into Python: never inside a scan. (Random draws are: the backend's
key chain is carried through the scan, so the draws are the Python loop's.)"""

Key = tuple[int | str, ...]
"""A point evaluated at one iteration: ints for parts that move with the counter, the
source text for parts that do not (compared textually, which is exact but conservative)."""


class Reject(Exception):
    """This loop (or segment) stays a Python loop; the message says why."""


@dataclass
class Item:
    """One statement the segment runs at every iteration: an op call, or a recurrence
    (merge) resolved to the branch that holds over the segment (`alias`)."""

    node: Exec
    op: ops.Op
    names: dict[str, str]
    parts: list[str]
    edges: list[Edge]
    alias: bool = False
    init: tuple[Edge, int] | None = None  # a merge's first-iterations branch, for how many


@dataclass
class Read:
    """Where a read of the step function comes from: `kind` is 'val' (this iteration),
    'reg' (`depth` iterations ago), 'inv' or 'xs' (input number `index`)."""

    kind: str
    tensor: TensorId | None = None
    depth: int = 0
    index: int = 0


@dataclass
class Segment:
    """Iterations `start..stop-1` (positions in the loop's range) and, when they run as a
    scan, the plan; `why` says why not."""

    start: int
    stop: int
    items: list[Item] = field(default_factory=list)
    frees: list[tuple[Free, tuple[tuple[str, bool], ...]]] = field(default_factory=list)
    reads: dict[tuple[int, int], Read] = field(default_factory=dict)  # (item, edge)
    invariants: list[str] = field(default_factory=list)  # read sources at the first point
    xs: list[str] = field(default_factory=list)  # read sources over the counter
    xs_points: dict[int, tuple[TensorId, list[str]]] = field(default_factory=dict)
    # xs read as points of a store: (tensor, key parts), to read them as one range
    depth: dict[TensorId, int] = field(default_factory=dict)  # carried tensors
    producer: dict[TensorId, int] = field(default_factory=dict)  # tensor -> item
    stacked: dict[TensorId, list[int]] = field(default_factory=dict)  # survivors via ys
    last: dict[TensorId, list[int]] = field(default_factory=dict)  # survivors via carry
    pops: list[tuple[Free, list[int]]] = field(default_factory=list)
    deferred: list[tuple[If, list[int]]] = field(default_factory=list)  # frees an enclosing
    # counter decides, with the iterations where they may hold
    inits: dict[tuple[TensorId, int], tuple[int, int]] = field(default_factory=dict)
    # (carried tensor, entry depth) -> (item, iteration) whose init branch fills it
    draws: bool = False  # random draws: the backend's key is carried
    why: str = ""

    @property
    def scanned(self) -> bool:
        return not self.why


class LoopAnalysis:
    """Evaluates a candidate loop's expressions at each iteration and plans its segments.
    `local`: tensors the generated code keeps in locals; `bounds`: bound values usable at
    compile time (those a boolean bound ends are left out, so loops over them are never
    planned); `reader(exec, edge, names)`: the Python loop's source of a read; `outer`:
    the ranges of the enclosing loops' counters, where static."""

    def __init__(self, loop: Loop, sdg: Any, kernel_ops: dict[int, ops.Op],
                 local: set[TensorId], bounds: dict[str, int], endings: Iterable[int],
                 reader: Callable[[Exec, Edge, dict[str, str]], str],
                 outer: dict[str, range] | None = None) -> None:
        self.loop = loop
        self.outer = outer or {}  # enclosing counters with static ranges
        self.reader = reader  # the Python loop's expression for a read
        self.sdg = sdg
        self.kernel_ops = kernel_ops
        self.local = local
        self.endings = set(endings)
        self.env: dict[str, Any] = {**PY_GLOBALS, **bounds}
        self.word = re.compile(rf"\b{re.escape(loop.counter)}\b")
        self._codes: dict[str, Any] = {}
        self._conds: dict[str, Any] = {}
        self.counters = list(range(self._int(loop.lo), self._int(loop.hi), loop.step))

    # ---------------------------------------------------------------- evaluation
    def _code(self, src: str) -> Any:
        code = self._codes.get(src)
        if code is None:
            code = compile(src, "<tempo-loop>", "eval")
            unknown = set(code.co_names) - set(self.env) - {self.loop.counter} - BUILTINS
            if unknown:  # (not cached: a second use must be rejected too)
                raise Reject(f"{src!r} uses {', '.join(sorted(unknown))}, unknown before "
                             "the run")
            self._codes[src] = code
        return code

    def _int(self, src: str) -> int:
        return int(eval(self._code(src), self.env, {}))  # noqa: S307 - our own source

    def at(self, src: str, n: int) -> Any:
        """`src` evaluated at iteration `n` (positions may lie outside the range)."""
        c = self.counters[0] + n * self.loop.step
        return eval(self._code(src), self.env, {self.loop.counter: c})  # noqa: S307

    def truth(self, src: str, n: int) -> Any:
        """A condition at iteration `n`: True, False or UNKNOWN (it depends on an
        enclosing loop's counter there)."""
        code = self._conds.get(src)
        if code is None:
            code = self._conds[src] = compile3(src)
        c = self.counters[0] + n * self.loop.step
        v = evaluate3(code, self.env, {self.loop.counter: c})
        if v is not UNKNOWN or not self.outer:
            return v
        # decided if it is the same at every value of the enclosing counters
        names = [k for k in self.outer if k in code.co_names]
        combos = list(itertools.islice(itertools.product(*(self.outer[k] for k in names)),
                                       MAX_OUTER_POINTS + 1))
        if not names or len(combos) > MAX_OUTER_POINTS:
            return v
        seen = {evaluate3(code, self.env, {self.loop.counter: c, **dict(zip(names, vals))})
                for vals in combos}
        return seen.pop() if len(seen) == 1 and UNKNOWN not in seen else UNKNOWN

    def moves(self, src: str) -> bool:
        return bool(self.word.search(src))

    def key(self, parts: list[str], n: int) -> Key:
        return tuple(self.at(p, n) if self.moves(p) else p for p in parts)

    # ---------------------------------------------------------------- segments
    def segments(self) -> list[Segment]:
        """Runs of iterations over which every condition of the body that decides what
        runs keeps its value (conditions of frees only do not split: the frees are placed
        per iteration). A recurrence's first point (`h[0] = init`) is its own run; it is
        tried joined with the run after it, its branch then the carry's first value."""
        conds = self._conditions(self.loop.body)
        truths = [self._truths(conds, n) for n in range(len(self.counters))]
        runs: list[Segment] = []
        for n, truth in enumerate(truths):
            if runs and truth == truths[n - 1]:
                runs[-1].stop = n + 1
            else:
                runs.append(Segment(n, n + 1))
        for k in range(len(runs) - 1, -1, -1):
            self._try(runs[k], truths)
            runs[k: k + 1] = self._peeled(runs[k], truths)
        k = 0
        while k + 1 < len(runs):  # a short run before a run whose merges only differ
            a, b = runs[k], runs[k + 1]
            same = all(x == y or merge for (_, merge), x, y in
                       zip(conds, truths[a.start], truths[b.start]))
            if not a.scanned and same and "?" not in truths[a.start]:
                joined = Segment(a.start, b.stop)
                self._try(joined, truths)
                if joined.scanned:
                    runs[k: k + 2] = [joined]
            k += 1
        return runs

    def _peeled(self, seg: Segment, truths: list[tuple]) -> list[Segment]:
        """A run that cannot scan whole may scan without its first or last iteration (a
        boundary read such as `x[min(t + 1, T - 1)]` at the end): those stay Python."""
        if seg.scanned or "?" in truths[seg.start] or seg.stop - seg.start <= MIN_STEPS:
            return [seg]
        for inner, edge in ((Segment(seg.start + 1, seg.stop), Segment(seg.start, seg.start + 1)),
                            (Segment(seg.start, seg.stop - 1), Segment(seg.stop - 1, seg.stop))):
            self._try(inner, truths)
            if inner.scanned:
                edge.why = seg.why
                return [edge, inner] if edge.start < inner.start else [inner, edge]
        return [seg]

    def _try(self, seg: Segment, truths: list[tuple]) -> None:
        """Plan `seg` as a scan, or say in `seg.why` why not."""
        if "?" in truths[seg.start]:
            seg.why = "a condition depends on an enclosing loop's counter"
        elif seg.stop - seg.start < MIN_STEPS:
            seg.why = f"a run of {seg.stop - seg.start} iteration(s)"
        else:
            try:
                self.plan(seg)
            except Reject as r:
                seg.why = str(r)

    def _truths(self, conds: list[tuple[str, bool]], n: int) -> tuple:
        """The conditions at iteration `n`, "?" for unknown ones."""
        return tuple("?" if (v := self.truth(c, n)) is UNKNOWN else v for c, _ in conds)

    def _conditions(self, node: Node) -> list[tuple[str, bool]]:
        """The conditions that decide what the body runs (not those of ifs that only
        free), each with whether it is a recurrence's branch condition."""
        out: list[tuple[str, bool]] = []
        if isinstance(node, Seq):
            for c in node.children:
                out += self._conditions(c)
        elif isinstance(node, If):
            if _only_frees(node):
                return out
            out.append((node.cond, False))
            out += self._conditions(node.then)
            if node.else_ is not None:
                out += self._conditions(node.else_)
        elif isinstance(node, Exec) and isinstance(self.sdg.ops[node.op_id], ops.MergeOp):
            names = self.names(node)
            out += [(e.cond.to_py(names), True) for e in self.sdg.in_edges[node.op_id]
                    if e.cond is not None]
        elif not isinstance(node, Exec | Free):
            raise Reject(f"its body holds a {type(node).__name__.lower()}")
        return out

    def names(self, node: Exec) -> dict[str, str]:
        op = self.sdg.ops[node.op_id]
        return {v.name: (p if p.isidentifier() else f"({p})")
                for v, p in zip(op.domain.variables, node.point)}

    # ---------------------------------------------------------------- one segment
    def plan(self, seg: Segment) -> None:
        """Fill `seg`'s plan, or raise `Reject`."""
        self._resolve(self.loop.body, seg)
        its = range(seg.start, seg.stop)
        made: dict[TensorId, dict[Key, int]] = {}
        seg.draws = any(isinstance(it.op, ops.RandOp) for it in seg.items)
        for k, it in enumerate(seg.items):
            for j in range(it.op.num_outputs):
                tid = TensorId(it.op.op_id, j)
                if tid in seg.producer:
                    raise Reject(f"{it.op!r} runs twice per iteration")
                seg.producer[tid] = k
                made[tid] = {self.key(it.parts, n): n for n in its}
                if len(made[tid]) != len(its):
                    raise Reject(f"{it.op!r} writes one point at several iterations")
        for k, it in enumerate(seg.items):
            for j, e in enumerate(it.edges):
                seg.reads[(k, j)] = self._classify(seg, k, it, e, made)
        self._inits(seg, made)
        self._outputs(seg, made)

    def _inits(self, seg: Segment, made: dict[TensorId, dict[Key, int]]) -> None:
        """A recurrence whose first `j` iterations take another branch (`h[0] = init`,
        then `h[t] = f(h[t-1])`): that branch, read at entry, is the first value of the
        carry, which nothing else may read there."""
        for k, it in enumerate(seg.items):
            if it.init is None:
                continue
            first, j = it.init
            r = seg.reads[(k, 0)]
            if r.kind != "reg" or r.depth < j or first.src in made:
                raise Reject(f"{it.op!r}'s first branch does not start a carried value")
            assert r.tensor is not None
            if sum(1 for x in seg.reads.values()
                   if x.kind == "reg" and x.tensor == r.tensor) != 1:
                raise Reject(f"{r.tensor!r} starts with {it.op!r}'s first branch and is read "
                             "elsewhere")
            for i in range(j):
                seg.inits[(r.tensor, r.depth - i)] = (k, seg.start + i)

    def _resolve(self, node: Node, seg: Segment,
                 guards: tuple[tuple[str, bool], ...] = ()) -> None:
        """The statements that run over the segment: conditions that decide what runs
        are constant over it; frees keep the conditions that place them (`guards`)."""
        n = seg.start
        if isinstance(node, Seq):
            for c in node.children:
                self._resolve(c, seg, guards)
        elif isinstance(node, If) and _only_frees(node):
            vals = [self.truth(node.cond, m) for m in range(seg.start, seg.stop)]
            if any(v is UNKNOWN for v in vals):  # an enclosing counter decides: run after
                seg.deferred.append((node, [seg.start + m for m, v in enumerate(vals)
                                            if v is UNKNOWN or v]))
            elif all(v is vals[0] for v in vals):
                self._resolve(node.then if vals[0] else node.else_ or Seq([]), seg, guards)
            else:
                self._resolve(node.then, seg, (*guards, (node.cond, True)))
                if node.else_ is not None:
                    self._resolve(node.else_, seg, (*guards, (node.cond, False)))
        elif isinstance(node, If):
            if self.truth(node.cond, n):
                self._resolve(node.then, seg, guards)
            elif node.else_ is not None:
                self._resolve(node.else_, seg, guards)
        elif isinstance(node, Free):
            seg.frees.append((node, guards))
        elif isinstance(node, Exec):
            seg.items.append(self._item(node, seg))
        else:
            raise Reject(f"its body holds a {type(node).__name__.lower()}")

    def _item(self, node: Exec, seg: Segment) -> Item:
        op = self.sdg.ops[node.op_id]
        names = self.names(node)
        parts = [names[v.name] for v in op.domain.variables]
        edges = list(self.sdg.in_edges[op.op_id])
        if isinstance(op, ops.MergeOp):
            held = [self._branch(op, edges, names, n) for n in range(seg.start, seg.stop)]
            j = held.index(held[-1])
            if any(h != held[0] for h in held[:j]) or any(h != held[-1] for h in held[j:]):
                raise Reject(f"{op!r} changes branch more than once")
            init = (edges[held[0]], j) if j else None
            return Item(node, op, names, parts, [edges[held[-1]]], alias=True, init=init)
        members = op.body if isinstance(op, ops.RegionOp) else (op,)
        bad = [m for m in members if m.name in IMPURE or getattr(m, "with_ts", False)
               or getattr(m, "block_inputs", ()) or (m is not op and m.name == "rand")]
        if bad:
            raise Reject(f"{bad[0]!r} calls Python, draws random numbers or reads blocks")
        if op.num_outputs == 0:
            raise Reject(f"{op!r} has no outputs (a side effect)")
        if op.op_id in self.endings:
            raise Reject(f"{op!r} is a stop condition")
        kop = self.kernel_ops.get(op.op_id, op)
        if isinstance(kop, ops.RandOp) and not kop.shape.is_static():
            raise Reject(f"{op!r} draws a shape known only at run time")
        if not isinstance(op, ops.EvalSymbolOp) and any(
                not isinstance(x, int) and self.moves(x.to_py(names))
                for x in kop.runtime_exprs()):
            raise Reject(f"{op!r} takes an argument that changes with the counter")
        return Item(node, op, names, parts, edges)

    def _branch(self, op: ops.Op, edges: list[Edge], names: dict[str, str], n: int) -> int:
        """The branch of a recurrence that holds at iteration `n` (the first that does)."""
        for k, e in enumerate(edges):
            if e.cond is None or self.truth(e.cond.to_py(names), n) is True:
                return k
        raise Reject(f"{op!r} has no branch that holds")

    def _classify(self, seg: Segment, k: int, it: Item, e: Edge,
                  made: dict[TensorId, dict[Key, int]]) -> Read:
        its = range(seg.start, seg.stop)
        slices = [m for m in e.expr if isinstance(m, Slice)]
        if e.src in made:
            if slices:
                raise Reject(f"{it.op!r} reads a slice of a value the loop makes")
            parts = [m.to_py(it.names) for m in e.expr]
            pos = made[e.src]
            offsets = {n - pos[kv] for n in its if (kv := self.key(parts, n)) in pos}
            if len(offsets) != 1:
                raise Reject(f"{it.op!r} reads {e.src!r} at offsets that vary")
            (off,) = offsets
            prod = seg.items[seg.producer[e.src]]
            for n in its:  # every read: the producer's point `off` iterations earlier
                if self.key(parts, n) != self.key(prod.parts, n - off):
                    raise Reject(f"{it.op!r} reads {e.src!r} off the producer's points")
            if off < 0 or (off == 0 and seg.producer[e.src] >= k):
                raise Reject(f"{it.op!r} reads {e.src!r} before it is made")
            if off == 0:
                return Read("val", e.src)
            if e.src in self.local:
                raise Reject(f"{e.src!r} is kept in a local")
            seg.depth[e.src] = max(seg.depth.get(e.src, 0), off)
            return Read("reg", e.src, off)
        src = self.reader(it.node, e, it.names)
        moving = any(self.moves(p) for m in e.expr
                     for p in (m.bounds_py(it.names) if isinstance(m, Slice)
                               else (m.to_py(it.names),)))
        if not moving:
            return Read("inv", index=_index(seg.invariants, src))
        if e.src in self.local:
            raise Reject(f"{e.src!r} is kept in a local")
        if self.sdg.tensors[e.src].shape.vars_used():  # e.g. an n-step window near the end
            raise Reject(f"{it.op!r} reads {e.src!r}, whose shape changes with its point")
        for m in slices:  # a moving window: every point must read as many rows
            lo, hi = m.bounds_py(it.names)
            if len({int(self.at(hi, n)) - int(self.at(lo, n)) for n in its}) != 1:
                raise Reject(f"{it.op!r} reads a slice whose length changes")
        index = _index(seg.xs, src)
        if not slices:
            seg.xs_points[index] = (e.src, [m.to_py(it.names) for m in e.expr])
        return Read("xs", index=index)

    def _outputs(self, seg: Segment, made: dict[TensorId, dict[Key, int]]) -> None:
        """Which points the stores must hold after the segment, and which to pop."""
        its = range(seg.start, seg.stop)
        freed: dict[TensorId, set[Key]] = {}
        for f, guards in seg.frees:
            at = [n for n in its if all(self.truth(c, n) is v for c, v in guards)]
            keys = [self.key(list(f.point), n) for n in at]
            freed.setdefault(f.tensor, set()).update(keys)
            outside = [n for n, kv in zip(at, keys) if kv not in made.get(f.tensor, {})]
            if outside:
                if f.tensor in self.local and len(outside) > 1:
                    raise Reject(f"a local {f.tensor!r} is freed at several iterations")
                seg.pops.append((f, outside))
        for tid, pos in made.items():
            if tid in self.local:
                continue
            keep = [n for kv, n in sorted(pos.items(), key=lambda p: p[1])
                    if kv not in freed.get(tid, set())]
            depth = seg.depth.get(tid, 0)
            tail = [n for n in keep if n >= seg.stop - depth]
            rest = [n for n in keep if n < seg.stop - depth]
            if rest:  # stacked: every iteration's value, the last ones too (one block)
                seg.stacked[tid] = keep
            elif tail:  # only the last carries survive: no stacked output
                seg.last[tid] = tail
        for node, _ in seg.deferred:  # (a local made outside is only dropped after)
            held = [f.tensor for f in walk(node) if isinstance(f, Free)
                    and f.tensor in self.local and f.tensor in seg.producer]
            if held:
                raise Reject(f"a local {held[0]!r} is freed under an enclosing condition")
        need = max(seg.depth.values(), default=0)
        if seg.stop - seg.start < need:
            raise Reject(f"a run of {seg.stop - seg.start} iterations reads {need} back")


def _only_frees(node: If) -> bool:
    return all(isinstance(n, Free | Seq | If) for n in walk(node))


def _index(xs: list[str], src: str) -> int:
    if src not in xs:
        xs.append(src)
    return xs.index(src)
