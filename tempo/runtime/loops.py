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

After the scan the stores hold what the Python loop would have left: the points no free
of the segment releases (stacked outputs, or the last carries), and the points made
before it that its frees release are popped. Emission is in `loops_emit.py`, the jax
runner in `loops_jax.py`.
"""

from __future__ import annotations

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
    frees: list[Free] = field(default_factory=list)
    reads: dict[tuple[int, int], Read] = field(default_factory=dict)  # (item, edge)
    invariants: list[str] = field(default_factory=list)  # read sources at the first point
    xs: list[str] = field(default_factory=list)  # read sources over the counter
    depth: dict[TensorId, int] = field(default_factory=dict)  # carried tensors
    producer: dict[TensorId, int] = field(default_factory=dict)  # tensor -> item
    stacked: dict[TensorId, list[int]] = field(default_factory=dict)  # survivors via ys
    last: dict[TensorId, list[int]] = field(default_factory=dict)  # survivors via carry
    pops: list[tuple[Free, list[int]]] = field(default_factory=list)
    deferred: list[If] = field(default_factory=list)  # frees an enclosing counter decides
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
            code = self._codes[src] = compile(src, "<tempo-loop>", "eval")
            unknown = set(code.co_names) - set(self.env) - {self.loop.counter}
            if unknown:
                raise Reject(f"{src!r} uses {', '.join(sorted(unknown))}, unknown before "
                             "the run")
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
        """Runs of iterations over which every condition of the body keeps its value."""
        conds = self._conditions(self.loop.body)
        frees_only = set(self._conditions(self.loop.body, frees_only=True))
        runs: list[Segment] = []
        prev: tuple | None = None
        for n in range(len(self.counters)):
            truth = self._truths(conds, n)
            if runs and truth == prev:
                runs[-1].stop = n + 1
            else:
                runs.append(Segment(n, n + 1))
            prev = truth
        for seg in runs:
            truth = self._truths(conds, seg.start)
            if any(v == "?" and c not in frees_only for c, v in zip(conds, truth)):
                seg.why = "a condition depends on an enclosing loop's counter"
                continue
            if seg.stop - seg.start < MIN_STEPS:
                seg.why = f"a run of {seg.stop - seg.start} iteration(s)"
                continue
            try:
                self.plan(seg)
            except Reject as r:
                seg.why = str(r)
        return runs

    def _truths(self, conds: list[str], n: int) -> tuple:
        """The conditions at iteration `n`, "?" for unknown ones."""
        return tuple("?" if (v := self.truth(c, n)) is UNKNOWN else v for c in conds)

    def _conditions(self, node: Node, frees_only: bool = False) -> list[str]:
        """The body's conditions (with `frees_only`, those of ifs that only free)."""
        out: list[str] = []
        if isinstance(node, Seq):
            for c in node.children:
                out += self._conditions(c, frees_only)
        elif isinstance(node, If):
            if not frees_only or _only_frees(node):
                out.append(node.cond)
            out += self._conditions(node.then, frees_only)
            if node.else_ is not None:
                out += self._conditions(node.else_, frees_only)
        elif frees_only:
            pass
        elif isinstance(node, Exec) and isinstance(self.sdg.ops[node.op_id], ops.MergeOp):
            names = self.names(node)
            out += [e.cond.to_py(names) for e in self.sdg.in_edges[node.op_id]
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
        self._outputs(seg, made)

    def _resolve(self, node: Node, seg: Segment) -> None:
        """The statements that run over the segment (its conditions are constant)."""
        n = seg.start
        if isinstance(node, Seq):
            for c in node.children:
                self._resolve(c, seg)
        elif isinstance(node, If) and _only_frees(node) and self.truth(node.cond, n) is UNKNOWN:
            seg.deferred.append(node)  # decided by an enclosing counter: run after the scan
        elif isinstance(node, If):
            if self.truth(node.cond, n):
                self._resolve(node.then, seg)
            elif node.else_ is not None:
                self._resolve(node.else_, seg)
        elif isinstance(node, Free):
            seg.frees.append(node)
        elif isinstance(node, Exec):
            seg.items.append(self._item(node, n))
        else:
            raise Reject(f"its body holds a {type(node).__name__.lower()}")

    def _item(self, node: Exec, n: int) -> Item:
        op = self.sdg.ops[node.op_id]
        names = self.names(node)
        parts = [names[v.name] for v in op.domain.variables]
        edges = list(self.sdg.in_edges[op.op_id])
        if isinstance(op, ops.MergeOp):
            held = [e for e in edges if e.cond is None or self.truth(e.cond.to_py(names), n)]
            if not held:
                raise Reject(f"{op!r} has no branch that holds")
            return Item(node, op, names, parts, [held[0]], alias=True)
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
        return Read("xs", index=_index(seg.xs, src))

    def _outputs(self, seg: Segment, made: dict[TensorId, dict[Key, int]]) -> None:
        """Which points the stores must hold after the segment, and which to pop."""
        its = range(seg.start, seg.stop)
        freed: dict[TensorId, set[Key]] = {}
        for f in seg.frees:
            keys = [self.key(list(f.point), n) for n in its]
            freed.setdefault(f.tensor, set()).update(keys)
            outside = [n for n, kv in zip(its, keys) if kv not in made.get(f.tensor, {})]
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
            if tail:
                seg.last[tid] = tail
            rest = [n for n in keep if n < seg.stop - depth]
            if rest:
                seg.stacked[tid] = rest
        for node in seg.deferred:
            held = [f.tensor for f in walk(node) if isinstance(f, Free) and f.tensor in self.local]
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
