"""Schedule tree → one Python function. Loops are Python `for` loops, index expressions
are inlined arithmetic, each Exec is one call of a pre-bound kernel: no tree walking."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tempo.core import ops
from tempo.core.errors import TempoError, UnsupportedError
from tempo.core.index_expr import PY_GLOBALS, IndexSequence, Slice
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.runtime.codegen_charges import Charges, fold, tighten
from tempo.runtime.codegen_endings import (
    NOT_ENDED,
    Ending,
    clamp_of,
    ended,
    find_ended_loops,
    past_end_guards,
    stop_check,
)
from tempo.runtime.codegen_locals import (
    WriteThrough,
    one_slot_tensors,
    transient_tensors,
    write_through,
)
from tempo.runtime.codegen_reads import fetch_slices, read_slices, tiled_point_reads
from tempo.runtime.codegen_static import (
    bind,
    charge_lines,
    free_lines,
    nbytes,
    static_tensors,
    write_name,
)
from tempo.runtime.codegen_steps import needs_last_step, step_loops
from tempo.runtime.loops_split import Invariants, emit_runs, resolved_branches
from tempo.schedule.tree import Exec, Fetch, Free, If, Loop, Node, Offload, Seq, While


class UndefinedPointError(TempoError, RuntimeError):
    """A recurrence was read at a point where none of its branches holds."""


@dataclass
class Generated:
    source: str
    # run(); with steps=True a generator yielding None per outer iteration, names at barriers
    fn: Callable[[], Iterator[str | None] | None]
    namespace: dict[str, Any] = field(default_factory=dict)
    line_ops: dict[int, int] = field(default_factory=dict)
    filename: str = "<tempo-generated>"  # the code's name in tracebacks


def store_name(tid: TensorId) -> str:
    return f"s{tid.op_id}_{tid.output_id}"


def local_name(tid: TensorId) -> str:
    return "v" + store_name(tid)


class CodeGen:
    """Emits the body of `run()` for one schedule over one SDG."""

    def __init__(
        self, sdg: SDG, kernels: dict[int, Any], stored: set[TensorId], steps: bool = False,
        blocked: dict[TensorId, int] | None = None, endings: tuple[Ending, ...] = (),
        kernel_ops: dict[int, ops.Op] | None = None, tick: bool = False,
    ) -> None:
        self.sdg = sdg
        self.tick = tick  # record the memory timeline after each outer step
        self.endings = {e.tensor.op_id: e for e in endings}
        self.ended_loops: dict[int, Ending] = {}  # id(Loop) -> the ending it stops at
        self.lag_guards: dict[int, tuple[str, str]] = {}  # id(Exec) -> (var, its point)
        self.end_guards: dict[int, str] = {}  # id(Exec) -> `point < bound` (past_end_guards)
        self.bounds: dict[str, Any] = {}  # every bound's compile-time value (the maximum)
        self.tails: dict[tuple[int, str], int] | None = None  # bound_tails, made once
        self.ended_ops: dict[str, set[int]] = {}  # ended dim -> ops its ending loop runs
        self.kept_frees: set[int] = set()  # id(Free) not emitted (past_end_guards)
        self.kernel_ops = kernel_ops or {}
        self.blocked = blocked or {}
        self.steps = steps  # emit a generator yielding after each outer-loop iteration
        self.step_ids: set[int] = set()  # the top-level loops that yield (codegen_steps)
        self.kernels = kernels
        self.stored = stored
        self.lines: list[str] = []
        self.line_ops: dict[int, int] = {}
        self.local: set[TensorId] = set()
        self.static: dict[TensorId, int] = {}  # point stores charged statically: bytes
        self.charges: Charges | None = None  # a tracked run's charges for its locals
        self.through = WriteThrough()  # block-stored values also kept in locals
        self.reading: int = 0  # id of the Exec whose reads are being emitted
        self.loops: Any = None  # lowers loops to compiled ones (runtime/loops_emit.py)
        self.deferred: set[TensorId] = set()  # block stores written through `pending`
        self.env: dict[str, Any] = {}  # names known when generating (bounds), to split loops
        self.resolved: dict[str, bool | str] = {}  # conditions the run emitted decides
        self.inv = Invariants()  # what the `for` loops being emitted bind before them

    def plan_locals(self, tree: Node, candidates: set[TensorId], tracked: bool,
                    scans: bool = False) -> None:
        """Keep the candidates that are consumed where they are made in locals: those
        freed where they are made (`transient_tensors`, charged by a tracked run), and
        those one local can hold (`one_slot_tensors`; a tracked run takes only those
        that are a stored value under another name, which it charges nothing; an
        untracked one also recurrences its loop carries, unless loops may become scans
        (`scans`), which carry them themselves)."""
        def exec_key(op_id: int, point: tuple[str, ...]) -> str:
            op = self.sdg.ops[op_id]
            names = self._names(op, point)
            return self._key([names[v.name] for v in op.domain.variables])

        def read_key(e: Edge, point: tuple[str, ...]) -> str | None:
            if not e.is_point():
                return None
            names = self._names(self.sdg.ops[e.sink], point)
            return self._key([m.to_py(names) for m in e.expr])

        self.local = transient_tensors(tree, self.sdg, candidates, exec_key, read_key)
        slots = one_slot_tensors(tree, self.sdg, candidates - self.local, exec_key, read_key,
                                 carried=not tracked and not scans)  # (a scan carries them)
        slot = set(slots)
        if tracked:  # charged at the write and credited at a free that runs with it, or
            self.local |= {t for t, paired in slots.items() if paired}
            named: set[TensorId] = set()  # a stored value under another name: no charge
            for op in self.sdg.topological():
                t = TensorId(op.op_id, 0)
                if t in slot and t not in self.local and isinstance(
                        op, ops.MergeOp | ops.IdentOp) and all(
                        e.is_point() and e.src not in self.local and e.src not in named
                        for e in self.sdg.in_edges[op.op_id]):
                    named.add(t)
            slot = named
        self.local |= slot
        self.through = write_through(tree, self.sdg, set(self.blocked), exec_key, read_key,
                                     carried=not tracked)

    # ---------------------------------------------------------------- expressions
    def _names(self, op: ops.Op, point: tuple[str, ...]) -> dict[str, str]:
        return {v.name: (p if p.isidentifier() else f"({p})")
                for v, p in zip(op.domain.variables, point)}

    def _key(self, parts: list[str]) -> str:
        return "(" + "".join(p + ", " for p in parts) + ")" if parts else "()"

    def read_blocks(self, edge: Edge, names: dict[str, str]) -> str:
        """A tiled read (ARCHITECTURE §5.4): the slice as a list of static blocks, from a
        block or window store, or from the point store's block reader `b<store>`."""
        members = list(edge.expr)
        d, sl = next((k, m) for k, m in enumerate(members) if isinstance(m, Slice))
        pre = self._key([m.to_py(names) for k, m in enumerate(members) if k != d])
        lo, hi = sl.bounds_py(names)
        src = store_name(edge.src)
        reader = src if edge.src in self.blocked else "b" + src
        return f"{reader}.read_blocks({pre}, {lo}, {hi})"

    def read(self, edge: Edge, names: dict[str, str]) -> str:
        if edge.src in self.local or (self.reading, edge.sink_in) in self.through.reads:
            return local_name(edge.src)
        src = store_name(edge.src)
        expr: IndexSequence = edge.expr
        members = list(expr)
        if all(not isinstance(m, Slice) for m in members):
            return f"{src}[{self._key([m.to_py(names) for m in members])}]"
        d = self.blocked.get(edge.src)
        along = members[d] if d is not None else None
        if isinstance(along, Slice):
            pre = [m.to_py(names) for k, m in enumerate(members) if k != d]
            lo, hi = along.bounds_py(names)
            return f"{src}.read_slice({self._key(pre)}, {lo}, {hi})"
        return f"read_slices({src}, {self._key(self._parts(edge, names))}, stack, E{src})"

    @staticmethod
    def _parts(edge: Edge, names: dict[str, str]) -> list[str]:
        """The read's coordinates: expressions for points, `(lo, hi)` for slices."""
        parts = []
        for m in edge.expr:
            if isinstance(m, Slice):
                lo, hi = m.bounds_py(names)
                parts.append(f"({lo}, {hi})")
            else:
                parts.append(m.to_py(names))
        return parts

    # ---------------------------------------------------------------- statements
    def target(self, tid: TensorId, key: str) -> str:
        """Where the point `key` of `tid` is written."""
        return local_name(tid) if tid in self.local else f"{store_name(tid)}[{key}]"

    def block(self, node: Node, ind: int) -> bool:
        """Emit `node` as the body of a statement that opens a block at depth `ind` (a
        `for`, `while`, `if` or `else`): a body whose statements all emit nothing (frees
        of values never stored, branches a split run decided away) becomes `pass`, so no
        block is ever empty. False when it was empty."""
        first = len(self.lines)
        self.emit(node, ind)
        if len(self.lines) > first:
            return True
        self.lines.append("    " * ind + "pass")
        return False

    def emit(self, node: Node, ind: int) -> None:
        pad = "    " * ind
        if isinstance(node, Seq):
            if not node.children:
                self.lines.append(f"{pad}pass")
            frees: list[Free] = []
            for k, c in enumerate(node.children):
                if isinstance(c, Free):
                    frees.append(c)
                    continue
                self.frees(frees, pad)
                self.emit(c, ind)
                done = self.through.drops.get((id(node), k))
                if done:  # the last reader of these written-through values has run
                    self.lines.append(f"{pad}{' = '.join(map(local_name, done))} = None")
                    if self.charges is not None:
                        self.lines.extend(self.charges.dropped_line(done, pad))
            self.frees(frees, pad)
        elif isinstance(node, Loop) and not (ind == 1 and (self.tick or self.steps)) and \
                self.bulk_frees(node, pad):
            pass  # (an outer loop keeps its steps: the timeline samples each)
        elif isinstance(node, Loop) and self.loops is not None and \
                not (ind == 1 and (self.tick or self.steps)) and self.loops.emit(node, ind):
            pass  # lowered (where the body allows) to compiled loops
        elif isinstance(node, Loop) and not (ind == 1 and (self.tick or self.steps)) and \
                id(node) not in self.ended_loops and clamp_of(self, node) is None \
                and emit_runs(self, node, ind):
            pass  # as runs of iterations with their conditions decided (loops_split.py)
        elif isinstance(node, Loop):
            step = f", {node.step}" if node.step != 1 else ""
            end = self.ended_loops.get(id(node))
            clamp = clamp_of(self, node)
            hi = node.hi if clamp is None else f"min({node.hi}, {clamp})"
            if end is not None:  # (re)entering: the bound is the maximum until a stop
                self.lines.append(f"{pad}{end.bound} = {end.maximum}")
                self.lines.append(f"{pad}ENDS[{end.var!r}] = {NOT_ENDED}")
            self.inv.open(node.counter, len(self.lines))
            self.lines.append(f"{pad}for {node.counter} in range({node.lo}, {hi}{step}):")
            if end is not None:
                self.lines.append(f"{pad}    if {node.counter} >= ENDS[{end.var!r}]:")
                self.lines.append(f"{pad}        break")
            self.block(node.body, ind + 1)
            self.line_ops = self.inv.close(self.lines, self.line_ops, pad)
            if self.tick and ind == 1:
                self.lines.append(f"{pad}    mem_tick()")
            if self.steps and ind == 1 and id(node) in self.step_ids:  # codegen_steps
                self.lines.append(f"{pad}    yield None")
            if end is not None and end.exhausted is not None:  # never a silent cap
                self.lines.append(f"{pad}if ENDS[{end.var!r}] == {NOT_ENDED}:")
                self.lines.append(f"{pad}    EXHAUSTED[{end.var!r}]()")
            if end is not None:  # code after the loop sees the dimension's real extent
                self.lines.append(f"{pad}{end.bound} = min({end.bound}, ENDS[{end.var!r}])")
        elif isinstance(node, While):
            self.inv.assigned(node.counter)
            self.lines.append(f"{pad}{node.counter} = {node.init}")
            self.lines.append(f"{pad}while {node.cond}:")
            self.block(node.body, ind + 1)
            self.lines.append(f"{pad}    {node.counter} += {node.step}")
        elif isinstance(node, If) and isinstance(self.resolved.get(node.cond), bool):
            taken = node.then if self.resolved[node.cond] else node.else_
            if taken is not None:  # decided over the run of a split loop being emitted
                self.emit(taken, ind)
        elif isinstance(node, If):
            self.lines.append(f"{pad}if {self.resolved.get(node.cond, node.cond)}:")
            self.block(node.then, ind + 1)
            if node.else_ is not None:
                self.lines.append(f"{pad}else:")
                if not self.block(node.else_, ind + 1):  # nothing to do otherwise
                    del self.lines[-2:]
        elif isinstance(node, Exec):
            first = len(self.lines)
            guard = self.lag_guards.get(id(node))
            if guard is not None:  # a point past a lagged stop: skipped (guard_lagged)
                self.lines.append(f"{pad}if {guard[1]} < ENDS[{guard[0]!r}]:")
                pad += "    "
            if id(node) in self.end_guards:  # past the real extent of an ended dimension
                self.lines.append(f"{pad}if {self.end_guards[id(node)]}:")
                pad += "    "
            self.exec_(node, pad)
            if node.op_id in self.endings:
                stop_check(self, node, pad)
            for k in range(first, len(self.lines)):
                self.line_ops[k + 2] = node.op_id  # +1 for "def run():", +1 for 1-based
        elif isinstance(node, Free):
            self.frees([node], pad)
        elif isinstance(node, Offload):
            if node.tensor not in self.local:
                key = self._key(list(node.point))
                self.lines.append(f"{pad}{store_name(node.tensor)}.offload({key})")
        elif isinstance(node, Fetch):
            self.fetch(node, pad)
        else:
            raise TypeError(f"unknown schedule node {node!r}")

    def bulk_frees(self, loop: Loop, pad: str) -> bool:
        """A loop that only frees a range of points of block or window stores along their
        stored dim becomes one `pop_range` per store (False: not such a loop)."""
        body = loop.body.children if isinstance(loop.body, Seq) else [loop.body]
        if loop.step != 1 or not body or not all(
                isinstance(f, Free) and f.tensor in self.blocked and f.tensor not in self.local
                for f in body):
            return False
        word = re.compile(rf"\b{re.escape(loop.counter)}\b")
        lines = []
        for f in body:
            assert isinstance(f, Free)
            d, point = self.blocked[f.tensor], list(f.point)
            pre = point[:d] + point[d + 1:]
            if point[d] != loop.counter or any(word.search(p) for p in pre):
                return False
            lines.append(f"{pad}{store_name(f.tensor)}.pop_range({self._key(pre)}, "
                         f"{loop.lo}, {loop.hi})")
        self.lines.extend(lines)
        return True

    def frees(self, frees: list[Free], pad: str) -> None:
        """A run of frees: the locals are dropped in one statement, and stores freeing the
        same point share one key."""
        frees[:] = [f for f in frees if id(f) not in self.kept_frees]
        drop = [f.tensor for f in frees if f.tensor in self.local]
        if drop:
            self.lines.append(f"{pad}{' = '.join(map(local_name, drop))} = None")
            if self.charges is not None:
                self.lines.extend(self.charges.dropped_line(drop, pad))
        by_key: dict[str, list[str]] = {}
        for f in frees:
            if f.tensor in self.static:
                self.lines.extend(free_lines(store_name(f.tensor), self._key(list(f.point)),
                                             self.static[f.tensor], pad))
            elif f.tensor in self.stored and f.tensor not in self.local:
                by_key.setdefault(self._key(list(f.point)), []).append(store_name(f.tensor))
        for key, stores in by_key.items():
            if len(stores) == 1:
                self.lines.append(f"{pad}{stores[0]}.pop({key}, None)")
            else:
                self.lines.append(f"{pad}_k = {key}")
                self.lines.extend(f"{pad}{s}.pop(_k, None)" for s in stores)
        frees.clear()

    def fetch(self, node: Fetch, pad: str) -> None:
        """The read of edge `node.edge` of `node.reader` at `node.point`, as a fetch."""
        if node.tensor in self.local:
            return
        op = self.sdg.ops[node.reader]
        edge = self.sdg.in_edges[op.op_id][node.edge]
        parts = self._parts(edge, self._names(op, node.point))
        ahead = node.ahead > 0
        src = store_name(node.tensor)
        if any(isinstance(m, Slice) for m in edge.expr):
            self.lines.append(f"{pad}fetch_slices({src}, {self._key(parts)}, {ahead})")
        else:
            self.lines.append(f"{pad}{src}.fetch({self._key(parts)}, {ahead})")

    def exec_(self, node: Exec, pad: str) -> None:
        op = self.sdg.ops[node.op_id]
        names = self._names(op, node.point)
        key = self._key([names[v.name] for v in op.domain.variables])
        edges = self.sdg.in_edges[op.op_id]
        if isinstance(op, ops.MergeOp):
            self.reading = id(node)
            self.merge(op, edges, names, key, pad)
            self.reading = 0
            if self.charges is not None:  # the value is one of the branches' sources
                self.charge(op, names, [e.src if e.is_point() else None for e in edges], pad)
            return
        self.reading = id(node)
        tiled = getattr(op, "block_inputs", ())
        args = [self.read_blocks(e, names) if e.sink_in in tiled else self.read(e, names)
                for e in edges]
        self.reading = 0
        exprs = self.kernel_ops.get(op.op_id, op).runtime_exprs()
        args += [e.to_py(names) if not isinstance(e, int) else str(e) for e in exprs]
        if getattr(op, "with_ts", False):
            ts = ", ".join(f"SYM_{v.name}: {names[v.name]}" for v in op.domain.variables)
            args.append("{" + ts + "}")
        call = f"k{op.op_id}({', '.join(args)})"
        n = op.num_outputs
        scratch, unscratch = ([], []) if self.charges is None else self.charges.around_call(
            op, pad)
        self.lines.extend(scratch)
        if n == 0:
            self.lines.append(f"{pad}{call}")
            if self.steps and isinstance(op, ops.BarrierOp):
                self.lines.append(f"{pad}yield {op.label!r}")
        elif n == 1:
            self.lines.append(pad + self.assign(TensorId(op.op_id, 0), op, names, key, call))
        elif not any(TensorId(op.op_id, k) in self.blocked or TensorId(op.op_id, k) in
                     self.static for k in range(n)):
            outs = ", ".join(self.target(TensorId(op.op_id, k), key) for k in range(n))
            self.lines.append(f"{pad}{outs} = {call}")
        else:
            self.lines.append(f"{pad}{', '.join(f'_o{k}' for k in range(n))} = {call}")
            for k in range(n):
                self.lines.append(pad + self.assign(TensorId(op.op_id, k), op, names, key,
                                                    f"_o{k}"))
        for k in range(n):  # charged where a storage-asking store's write would be
            if TensorId(op.op_id, k) in self.static:
                self.lines.extend(charge_lines(TensorId(op.op_id, k),
                                               self.static[TensorId(op.op_id, k)], pad))
        self.lines.extend(unscratch)
        if n and self.charges is not None:
            e = edges[0] if edges else None
            view = e.src if e is not None and (e.is_point() or e.src in self.blocked) else None
            self.charge(op, names, [view], pad)

    def charge(self, op: ops.Op, names: dict[str, str], sources: list[TensorId | None],
               pad: str) -> None:
        """A tracked run charges the locals `op` just made (see codegen_charges)."""
        assert self.charges is not None
        for k in range(op.num_outputs):
            tid = TensorId(op.op_id, k)
            if tid in self.local or tid in self.through.tensors:
                self.lines.extend(self.charges.made(op, tid, names, sources, pad))


    def assign(self, tid: TensorId, op: ops.Op, names: dict[str, str], key: str,
               value: str) -> str:
        """The statement storing `value` as point `key` of `tid`: a block or window
        store's write copies it into its slot; anything else is an assignment."""
        d = self.blocked.get(tid)
        if tid in self.static:
            return f"{write_name(store_name(tid))}({key}, {value})"
        if d is None or tid in self.local:
            return f"{self.target(tid, key)} = {value}"
        point = [names[v.name] for v in op.domain.variables]
        pre, at = self._key(point[:d] + point[d + 1:]), point[d]
        if tid in self.through.tensors:
            v = local_name(tid)  # read back where it is written: keep it in a local too
            return f"{v} = {value}; {self.write(tid, pre, at, v)}"
        return self.write(tid, pre, at, value)

    def write(self, tid: TensorId, pre: str, at: str, value: str) -> str:
        """A block or window store's write of point `at` of prefix `pre`: a deferred store
        takes the value into its pending dict (no Python call), others copy it in."""
        moving = [e.bound for e in self.endings.values()]
        if tid in self.deferred:  # (a store's pending dict per prefix is never replaced)
            return f"{self.inv.use(f'p{store_name(tid)}[{pre}]', pre, moving)}[{at}] = {value}"
        return f"w{store_name(tid)}({self.inv.use(pre, pre, moving)}, {at}, {value})"

    def merge(
        self, op: ops.Op, edges: list[Edge], names: dict[str, str], key: str, pad: str
    ) -> None:
        """First branch whose condition holds wins (the if/elif order is branch order)."""
        out = TensorId(op.op_id, 0)
        conds = [e.cond.to_py(names) if e.cond is not None else "True" for e in edges]
        if self.resolved:  # a run of a split loop decides some branches
            kept, closed = resolved_branches(edges, conds, self.resolved)
            if closed and len(kept) == 1:
                self.lines.append(pad + self.assign(out, op, names, key,
                                                    self.read(kept[0][0], names)))
                return
            edges, conds = [e for e, _ in kept], [c for _, c in kept]
            if closed:
                conds[-1] = "True"
        if len(conds) == 2 and conds[1] == f"(not {conds[0]})":
            self.lines.append(f"{pad}if {conds[0]}:")  # the second branch is the complement
            self.lines.append(pad + "    " + self.assign(out, op, names, key,
                                                        self.read(edges[0], names)))
            self.lines.append(f"{pad}else:")
            self.lines.append(pad + "    " + self.assign(out, op, names, key,
                                                        self.read(edges[1], names)))
            return
        for k, (e, cond) in enumerate(zip(edges, conds)):
            kw = "if" if k == 0 else "elif"
            self.lines.append(f"{pad}{kw} {cond}:")
            self.lines.append(pad + "    " + self.assign(out, op, names, key,
                                                        self.read(e, names)))
        if edges:
            self.lines.append(f"{pad}else:")
        self.lines.append(
            f"{pad}{'    ' if edges else ''}undefined({op.op_id}, {key})"
        )


def generate(
    sdg: SDG,
    tree: Node,
    kernels: dict[int, Any],
    stores: dict[TensorId, Any],
    bounds: dict[str, int],
    stack: Callable,
    undefined: Callable[[int, tuple], None],
    steps: bool = False,
    endings: tuple[Ending, ...] = (),
    ends: dict[str, int] | None = None,
    kernel_ops: dict[int, ops.Op] | None = None,
    use_locals: bool = True,
    tick: Callable[[], None] | None = None,
    accountant: Any = None,
    views_share: bool = True,
    block_reader: Callable[[TensorId, int, int], Any] | None = None,
    loops: Callable[[CodeGen], Any] | None = None,
    empty: Callable[[TensorId, tuple[int, ...]], Any] | None = None,
) -> Generated:
    """Compile the schedule into `run()` (or, with `steps`, a generator `run()` that yields
    after each outer-loop iteration and at barriers); stores and kernels are bound.
    `kernel_ops` are the ops the kernels were made from (bounds substituted, so fewer
    runtime args); with `use_locals`, points consumed where they are made skip the point
    stores (never block stores, whose writes must be seen); with an `accountant` (a
    tracked run) the locals are charged to it by their static bytes (`views_share`: the
    backend's movement ops return views, which cost nothing of their own).
    `block_reader(tid, dim, block)` makes the block reader of a point store that a tiled
    op reads in blocks. `loops(gen)` makes the lowering of compiled loops (the
    executor's, on jax with enable_compiled_loops); `empty(tid, lengths)` an empty read."""
    blocked = {tid: s.dim for tid, s in stores.items() if hasattr(s, "read_slice")}
    gen = CodeGen(sdg, kernels, set(stores), steps, blocked, endings, kernel_ops,
                  tick is not None)
    gen.deferred = {tid for tid in blocked if isinstance(getattr(stores[tid], "pending", None),
                                                         dict)}
    moving = {e.bound for e in endings}  # (these change at run time)
    gen.env = {**PY_GLOBALS, **{k: v for k, v in bounds.items() if k not in moving}}
    gen.bounds = dict(bounds)
    find_ended_loops(gen, tree)
    past_end_guards(gen, tree)
    lost = [e for e in endings if e not in gen.ended_loops.values()]
    if lost:
        raise UnsupportedError(f"the stop condition of dimension {lost[0].var} is never "
                               "computed in the schedule (it was optimised away)",
                               site=lost[0].site)
    if use_locals:  # a stop condition is read from its store: never a local
        stop = {e.tensor for e in endings}
        gen.plan_locals(tree, {tid for tid, s in stores.items() if isinstance(s, dict)
                               and (type(s) is dict or accountant is not None)
                               and not sdg.is_kept(tid.op_id) and tid not in stop},
                        tracked=accountant is not None, scans=loops is not None)
        if accountant is not None:
            gen.charges = Charges(sdg, gen.local, views_share)
            if loops is None:  # (compiled loops write their stores themselves)
                gen.static = {t: nbytes(sdg, t) for t in static_tensors(
                    sdg, stores, {t for t in stores if t not in gen.local and t not in stop
                                  and t not in blocked and not sdg.is_kept(t.op_id)})}
    if loops is not None:
        gen.loops = loops(gen)
    if steps:
        gen.step_ids = step_loops(sdg, tree)
    gen.emit(tree, 1)
    if tick is not None:  # a last sample: programs without an outer loop have one too
        gen.lines.append("    mem_tick()")
    if gen.charges is not None and accountant is not None and accountant.cap is None:
        # one reservation per statement list of small charges; not under a cap, where a
        # reservation above the exact live bytes would fail (or swap) a program that fits
        gen.lines, where = fold(gen.lines)
        gen.line_ops = {where[k - 2] + 2: v for k, v in gen.line_ops.items() if k - 2 in where}
    elif gen.charges is not None:  # under a cap: only the exact merges
        gen.lines, where = tighten(gen.lines)
        gen.line_ops = {where[k - 2] + 2: v for k, v in gen.line_ops.items() if k - 2 in where}
    if steps and needs_last_step(tree, gen.step_ids):
        # a last step for statements after the outer loop (or the whole of a program
        # without one); none when the outer loop's own yield was the last thing run, so
        # tick() is True once per outer iteration and no more
        gen.lines.append("    yield None")
    header = ["def run():"]
    gen.lines = [f"    {name} = {value}" for name, value in sorted(bounds.items())] + gen.lines
    gen.line_ops = {k + len(bounds): v for k, v in gen.line_ops.items()}
    ns: dict[str, Any] = dict(PY_GLOBALS)
    ns.update({"read_slices": read_slices, "fetch_slices": fetch_slices, "stack": stack,
               "undefined": undefined, "ended": ended,
               "ENDS": ends if ends is not None else {}, "mem_tick": tick, "_A": accountant,
               "EXHAUSTED": {e.var: e.raise_exhausted for e in endings}})
    for tid, store in stores.items():
        ns[store_name(tid)] = store
        ns["E" + store_name(tid)] = None if empty is None else functools.partial(empty, tid)
        if tid in gen.static:
            bind(ns, store_name(tid), store)
        if tid in blocked:
            ns["w" + store_name(tid)] = store.write
        if tid in gen.deferred:
            ns["p" + store_name(tid)] = store.pending
    for tid, dim, block in tiled_point_reads(sdg, blocked):
        if block_reader is None:
            raise UnsupportedError(f"{tid} is read in blocks but no block reader was given")
        ns["b" + store_name(tid)] = block_reader(tid, dim, block)
    for op_id, k in kernels.items():
        ns[f"k{op_id}"] = k
    if gen.loops is not None:
        ns.update(gen.loops.namespace)
    for v in sdg.universe.variables:
        ns[f"SYM_{v.name}"] = v
    source = "\n".join(header + gen.lines) + "\n"
    filename = "<tempo-generated>" if not steps else "<tempo-steps>"
    code = compile(source, filename, "exec")
    exec(code, ns)  # noqa: S102 - our own generated source
    return Generated(source, ns["run"], ns, gen.line_ops, filename)
