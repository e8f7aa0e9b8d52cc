"""Emission of compiled loops into the generated `run()` (see `loops.py` for the plan).

A planned segment becomes: its invariant reads, the carries' first values (read from the
stores at the iterations before the segment) and the stacked moving reads, one call of
the segment's runner (`jax.lax.scan` over a generated step function), then the stores
written as the Python loop would have left them. If the runner cannot trace the step
(a kernel that needs concrete values), it returns None once and for good, and the same
iterations run as the Python loop they were: results never depend on the lowering.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tempo.core import ops
from tempo.core.dtype import DataType
from tempo.core.index_expr import PY_GLOBALS
from tempo.core.sdg import Edge, TensorId
from tempo.runtime.backends.common import NP_OF
from tempo.runtime.codegen_endings import clamp_of
from tempo.runtime.loops import Item, LoopAnalysis, Read, Reject, Segment
from tempo.runtime.loops_nest import analyse
from tempo.runtime.stores import TrackedStore
from tempo.runtime.stores_stacked import StackedStore
from tempo.schedule.tree import Exec, If, Loop, Node, Seq, While, walk

Rows = Callable[[Any, int, int], list[Any]]
RunnerFactory = Callable[[str, dict[str, Any], list[int], int, int], Any]
"""(step source, its namespace, the segment's counter values, its numbers of stacked
outputs and stacked reads) -> a runner: called with (invariants, first carries, stacked reads in the
order of the counters), it returns (last carries, stacked outputs in the order of the
counters), or None when the step cannot be compiled."""


@dataclass
class LoopReport:
    """One candidate loop: its header, and per segment (first counter, last counter,
    runner or None, why it stayed Python)."""

    loop: str
    segments: list[tuple[int, int, Any, str]]
    why: str = ""

    def scanned(self) -> list[tuple[int, int]]:
        """Segments that ran as scans (their runners traced)."""
        return [(a, b) for a, b, r, _ in self.segments
                if r is not None and r.failed is None]


def _val(tid: TensorId) -> str:
    return f"v{tid.op_id}_{tid.output_id}"


def _reg(tid: TensorId, depth: int) -> str:
    return f"r{tid.op_id}_{tid.output_id}_{depth}"


class LoopLowering:
    """Lowers the candidate loops of one generated function (a hook of `CodeGen.emit`)."""

    def __init__(self, gen: Any, tree: Node, bounds: dict[str, int], runner: RunnerFactory,
                 rows: Rows, backend: Any = None, stores: dict[TensorId, Any] | None = None,
                 stacked: Callable[[int, Any], StackedStore] | None = None,
                 nest: Callable[..., Any] | None = None) -> None:
        self.gen = gen
        self.nest = nest  # (body source, plan, kernel ops) -> a nest's runner
        self.stores = stores  # a plain point store a scan writes whole becomes a block
        self.stacked = stacked  # store (`stacked(key position, the store it replaces)`);
        # None: rows, per point
        ended = {e.bound for e in gen.endings.values()}
        self.bounds = {k: v for k, v in bounds.items() if k not in ended}
        self.outer: dict[int, dict[str, range]] = {}  # id(loop) -> enclosing static ranges
        self._enclosing(tree, {})
        self.runner = runner
        self.namespace: dict[str, Any] = {"rows": rows}
        if backend is not None:  # the key chain random draws split (carried through scans)
            self.namespace["_rkey"] = lambda: backend.key
            self.namespace["_wkey"] = lambda key: setattr(backend, "key", key)
        self.plain: set[int] = set()  # sub-loops emitted as Python
        self.reports: list[LoopReport] = []

    def emit(self, loop: Loop, ind: int) -> bool:
        """Emit `loop` with its planned segments as scans (False: emit it as usual)."""
        gen = self.gen
        if id(loop) in self.plain or id(loop) in gen.ended_loops or any(
                id(n) in gen.end_guards or isinstance(n, Loop) and clamp_of(gen, n)
                for n in [loop, *walk(loop.body)]):
            return False  # (an ended dimension's real extent is known only at run time)
        inner = walk(loop.body)
        if any(isinstance(n, Loop) for n in inner) and \
                not any(isinstance(n, While) for n in inner):
            return self._nest(loop, ind)
        if any(isinstance(n, Loop | While) for n in inner) or \
                not any(isinstance(n, Exec) for n in inner):
            return False
        head = f"for {loop.counter} in range({loop.lo}, {loop.hi}, {loop.step})"
        try:
            an = LoopAnalysis(loop, gen.sdg, gen.kernel_ops, gen.local, self.bounds,
                              gen.endings, self._read, self.outer.get(id(loop)))
            segs = an.segments() if an.counters else []
        except Reject as r:
            self.reports.append(LoopReport(head, [], str(r)))
            return False
        except (ArithmeticError, TypeError, ValueError) as exc:  # e.g. a division by 0
            self.reports.append(LoopReport(head, [], f"{type(exc).__name__}: {exc}"))
            return False
        for s in segs:
            if s.scanned and s.draws and "_rkey" not in self.namespace:
                s.why = "random draws without the backend's key chain"
            if s.scanned and any(t in gen.static for t in (*s.stacked, *s.last)):
                s.why = "its outputs go to a store charged statically (codegen_static.py)"
        if not any(s.scanned for s in segs):
            self.reports.append(LoopReport(head, [(an.counters[s.start], an.counters[s.stop - 1],
                                                   None, s.why) for s in segs]))
            return False
        report = LoopReport(head, [])
        k = 0
        while k < len(segs):
            seg = segs[k]
            if seg.scanned:
                run = self._scan(an, seg, ind)
                report.segments.append((an.counters[seg.start], an.counters[seg.stop - 1],
                                        run, ""))
                k += 1
                continue
            stop = k
            while stop < len(segs) and not segs[stop].scanned:
                stop += 1
            self._python(an, seg.start, segs[stop - 1].stop, ind)
            report.segments += [(an.counters[s.start], an.counters[s.stop - 1], None, s.why)
                                for s in segs[k:stop]]
            k = stop
        self.reports.append(report)
        return True

    def _nest(self, loop: Loop, ind: int) -> bool:
        """A top-level static loop with inner loops as one scan per segment whose step is
        the body's generated code (loops_nest.py); False: emit it as usual."""
        from tempo.runtime.codegen import store_name

        gen = self.gen
        head = f"for {loop.counter} in range({loop.lo}, {loop.hi}, {loop.step})"
        if self.nest is None or self.outer.get(id(loop)) or gen.charges is not None or \
                any(id(n) in gen.ended_loops for n in walk(loop.body)):
            return False
        try:
            env = {**PY_GLOBALS, **self.bounds}
            counters = list(range(int(eval(loop.lo, env, {})),  # noqa: S307 - our source
                                  int(eval(loop.hi, env, {})), loop.step))
        except (NameError, ArithmeticError, TypeError, ValueError):
            return False
        saved, saved_ops = gen.lines, dict(gen.line_ops)
        gen.lines = []
        try:
            gen.emit(loop.body, 1)
            body = gen.lines
        finally:
            gen.lines, gen.line_ops = saved, saved_ops
        source = (f"def _nbody({loop.counter}):\n" + "\n".join(body)
                  + "\n    return locals()\n")
        runners = {n: r for n, r in self.namespace.items() if n.startswith("_L")}
        dims = {store_name(t): getattr(s, "dim", None) if isinstance(s, StackedStore) else None
                for t, s in (self.stores or {}).items()}
        env.update({n: v for n, v in self.namespace.items() if not n.startswith("_")})
        env.update({f"SYM_{v.name}": v for v in gen.sdg.universe.variables})
        try:
            plan = analyse(source, loop.counter, counters, env, gen.kernel_ops, runners, dims)
        except Reject as r:
            self.reports.append(LoopReport(head, [], str(r)))
            return False
        report = LoopReport(head, [])
        self.reports.append(report)
        if not any(p is not None for _, _, p, _ in plan.segments):
            report.segments = [(counters[a], counters[b - 1], None, why)
                               for a, b, _, why in plan.segments]
            return False
        name = f"_N{sum(1 for n in self.namespace if n.startswith('_N'))}"
        run = self.namespace[name] = self.nest(source, plan, gen.kernel_ops)
        an = _Range(loop, counters)
        pad = "    " * ind
        k = 0
        segs = plan.segments
        while k < len(segs):
            a, b, p, why = segs[k]
            if p is not None:
                gen.lines.append(f"{pad}if not {name}({k}, globals(), locals()):")
                self._python(an, a, b, ind + 1)  # type: ignore[arg-type]  # segment bounds are ints once planned
                report.segments.append((counters[a], counters[b - 1], _Seg(run, k), ""))
                k += 1
                continue
            stop = k
            while stop < len(segs) and segs[stop][2] is None:
                stop += 1
            self._python(an, a, segs[stop - 1][1], ind)  # type: ignore[arg-type]  # segment bounds are ints once planned
            report.segments += [(counters[x], counters[y - 1], None, w)
                                for x, y, _, w in segs[k:stop]]
            k = stop
        return True

    def _enclosing(self, node: Node, ranges: dict[str, range]) -> None:
        if isinstance(node, Seq):
            for c in node.children:
                self._enclosing(c, ranges)
        elif isinstance(node, If):
            self._enclosing(node.then, ranges)
            if node.else_ is not None:
                self._enclosing(node.else_, ranges)
        elif isinstance(node, Loop | While):
            self.outer[id(node)] = dict(ranges)
            inner = dict(ranges)
            if isinstance(node, Loop):
                try:
                    env = {**PY_GLOBALS, **self.bounds}
                    lo, hi = (int(eval(x, env, {})) for x in (node.lo, node.hi))  # noqa: S307
                    inner[node.counter] = range(lo, hi, node.step)
                except (NameError, ArithmeticError, TypeError, ValueError):
                    pass  # a range over an enclosing counter: that counter stays unknown
            self._enclosing(node.body, inner)

    def _read(self, node: Exec, e: Edge, names: dict[str, str]) -> str:
        gen = self.gen
        gen.reading = id(node)
        try:
            return str(gen.read(e, names))
        finally:
            gen.reading = 0

    def _python(self, an: LoopAnalysis, start: int, stop: int, ind: int) -> None:
        """Iterations `start..stop-1` as the Python loop they were."""
        loop = an.loop
        first = an.counters[0] + start * loop.step
        sub = Loop(loop.counter, str(first), str(first + (stop - start) * loop.step),
                   loop.step, loop.body)
        self.plain.add(id(sub))
        self.gen.emit(sub, ind)

    def _counter(self, an: LoopAnalysis, n: int) -> int:
        return an.counters[0] + n * an.loop.step

    def _scan(self, an: LoopAnalysis, seg: Segment, ind: int) -> Any:
        gen, pad, c = self.gen, "    " * ind, an.loop.counter
        lines = gen.lines
        name = f"_L{sum(1 for n in self.namespace if n.startswith('_L'))}"
        run = self.namespace[name] = self.runner(
            self._step_source(seg, c), self._step_namespace(),
            an.counters[seg.start:seg.stop], len(seg.stacked), len(seg.xs))
        lines.append(f"{pad}{c} = {self._counter(an, seg.start)}")
        lines.append(f"{pad}_li = ({''.join(s + ', ' for s in seg.invariants)})")
        first: list[str] = []
        for tid, depth in seg.depth.items():  # X at the `depth` iterations before
            parts = seg.items[seg.producer[tid]].parts
            for j in range(depth, 0, -1):
                init = seg.inits.get((tid, j))
                if init is not None:  # a recurrence's first branch starts the carry
                    it = seg.items[init[0]]
                    assert it.init is not None
                    lines.append(f"{pad}{c} = {self._counter(an, init[1])}")
                    value = self._read(it.node, it.init[0], it.names)
                    lines.append(f"{pad}_c{len(first)} = {value}")
                else:
                    lines.append(f"{pad}{c} = {self._counter(an, seg.start - j)}")
                    lines.append(f"{pad}_c{len(first)} = {self._stored(tid, parts)}")
                first.append(f"_c{len(first)}")
        if seg.draws:
            first.append("_rkey()")
        lines.append(f"{pad}_lc = ({''.join(v + ', ' for v in first)})")
        order = self._ascending(an, seg)
        xs = "".join(self._xs(an, seg, k, order) + ", " for k in range(len(seg.xs)))
        lines.append(f"{pad}_lr = {name}(_li, _lc, ({xs}))")
        lines.append(f"{pad}if _lr is None:")
        self._python(an, seg.start, seg.stop, ind + 1)
        lines.append(f"{pad}else:")
        pad += "    "
        lines.append(f"{pad}_lf, _ly = _lr")
        if seg.draws:
            lines.append(f"{pad}_wkey(_lf[-1])")
        for j, (tid, keep) in enumerate(seg.stacked.items()):
            self._write_back(an, seg, tid, keep, f"_ly[{j}]", order, pad)
        base = 0
        for tid, depth in seg.depth.items():
            parts = seg.items[seg.producer[tid]].parts
            for n in seg.last.get(tid, []):
                lines.append(f"{pad}{c} = {self._counter(an, n)}")
                at = base + n - (seg.stop - depth)
                lines.append(f"{pad}{self._stored(tid, parts)} = _lf[{at}]")
            base += depth
        for free, its in seg.pops:
            if len(its) == 1:
                lines.append(f"{pad}{c} = {self._counter(an, its[0])}")
                gen.frees([free], pad)
            else:
                lines.append(f"{pad}for {c} in {self._points(an, its)}:")
                gen.block(free, ind + 2)
        for node, its in seg.deferred:  # frees an enclosing counter decides, tested as
            if its:  # the loop would, at the iterations where they may hold
                lines.append(f"{pad}for {c} in {self._points(an, its)}:")
                gen.block(node, ind + 2)
        return run

    @staticmethod
    def _ascending(an: LoopAnalysis, seg: Segment) -> list[int]:
        """The segment's iterations in the order of their counters (the order of the
        runner's stacked reads and outputs)."""
        its = list(range(seg.start, seg.stop))
        return its[::-1] if an.loop.step < 0 else its

    @staticmethod
    def _run_of(an: LoopAnalysis, parts: list[str], order: list[int]
                ) -> tuple[int, int, int] | None:
        """(key position, lo, hi) if the points `parts` names at iterations `order` are
        lo..hi-1 in order along one position, the others fixed; else None."""
        moving = [k for k, p in enumerate(parts) if an.moves(p)]
        if len(moving) != 1:
            return None
        pos = moving[0]
        vals = [int(an.at(parts[pos], n)) for n in order]
        if vals != list(range(vals[0], vals[0] + len(vals))):
            return None
        return pos, vals[0], vals[-1] + 1

    def _xs(self, an: LoopAnalysis, seg: Segment, k: int, order: list[int]) -> str:
        """Stacked read `k`, in the runner's order: a store's points over a range as one
        range read (a block store returns its block), else the points stacked."""
        from tempo.runtime.codegen import store_name

        src, c = seg.xs[k], an.loop.counter
        point = seg.xs_points.get(k)
        if point is not None and src.startswith(store_name(point[0]) + "["):
            run = self._run_of(an, point[1], order)
            if run is not None:
                pos, lo, hi = run
                key = [f"({lo}, {hi})" if j == pos else p for j, p in enumerate(point[1])]
                return f"read_slices({store_name(point[0])}, {self.gen._key(key)}, stack)"
        step = abs(an.loop.step)
        span = (f"range({self._counter(an, order[0])}, "
                f"{self._counter(an, order[-1]) + step}, {step})")
        return f"stack([{src} for {c} in {span}])"

    def _write_back(self, an: LoopAnalysis, seg: Segment, tid: TensorId, keep: list[int],
                    ys: str, order: list[int], pad: str) -> None:
        """The points `keep` of stacked output `ys` into `tid`'s store: as one block when
        the store can hold blocks (the scan's points are a range along one key position),
        else row by row."""
        from tempo.runtime.codegen import store_name

        lines, c = self.gen.lines, an.loop.counter
        parts = seg.items[seg.producer[tid]].parts
        run = self._run_of(an, parts, order)
        store = self.stores.get(tid) if self.stores is not None else None
        tracked = type(store) is TrackedStore and tid not in self.gen.static
        if run is not None and self.stacked is not None and tid not in self.gen.local and (
                type(store) is dict or tracked or
                (isinstance(store, StackedStore) and store.dim == run[0])):
            pos, lo, _ = run
            if type(store) is dict or tracked:  # (a tracked one charges the block)
                assert self.stores is not None
                self.stores[tid] = self.stacked(pos, store)
            alive = None if len(keep) == seg.stop - seg.start else \
                sorted(int(an.at(parts[pos], n)) - lo for n in keep)
            pre = self.gen._key([p for j, p in enumerate(parts) if j != pos])
            lines.append(f"{pad}{store_name(tid)}.put_block({pre}, {lo}, {ys}, {alive!r})")
            return
        row = {n: r for r, n in enumerate(order)}
        rs = sorted(row[n] for n in keep)
        lines.append(f"{pad}_rows = rows({ys}, {rs[0]}, {rs[-1] - rs[0] + 1})")
        pairs = sorted((row[n] - rs[0], self._counter(an, n)) for n in keep)
        if [r for r, _ in pairs] == list(range(len(pairs))):
            step = abs(an.loop.step)
            lines.append(f"{pad}for _n, {c} in enumerate(range({pairs[0][1]}, "
                         f"{pairs[-1][1] + step}, {step})):")
        else:
            lines.append(f"{pad}for _n, {c} in ({', '.join(map(str, pairs))}, ):")
        lines.append(f"{pad}    {self._stored(tid, parts)} = _rows[_n]")

    def _stored(self, tid: TensorId, parts: list[str]) -> str:
        from tempo.runtime.codegen import store_name

        if tid in self.gen.local:
            raise Reject(f"{tid!r} is kept in a local")
        return f"{store_name(tid)}[{self.gen._key(parts)}]"

    def _points(self, an: LoopAnalysis, its: list[int]) -> str:
        """The counters of iterations `its`: a range where they are contiguous."""
        if its == list(range(its[0], its[-1] + 1)):
            return self._range(an, its[0], its[-1] + 1)
        return f"({', '.join(str(self._counter(an, n)) for n in its)}, )"

    @staticmethod
    def _range(an: LoopAnalysis, start: int, stop: int) -> str:
        first = an.counters[0] + start * an.loop.step
        return f"range({first}, {first + (stop - start) * an.loop.step}, {an.loop.step})"

    # ---------------------------------------------------------------- the step function
    def _step_namespace(self) -> dict[str, Any]:
        ns: dict[str, Any] = dict(PY_GLOBALS)
        ns.update(self.bounds)
        ns.update({f"k{i}": k for i, k in self.gen.kernels.items()})
        return ns

    def _step_source(self, seg: Segment, counter: str) -> str:
        """`def step(_li, _carry, _x)`: one iteration of the segment, in locals."""
        regs = [_reg(tid, j) for tid, d in seg.depth.items() for j in range(d, 0, -1)]
        regs += ["_key"] if seg.draws else []
        lines = ["def step(_li, _carry, _x):",
                 f"    {counter} = _x[0]",
                 f"    ({''.join(f'i{k}, ' for k in range(len(seg.invariants)))}) = _li",
                 f"    ({''.join(f'x{k}, ' for k in range(len(seg.xs)))}) = _x[1:]",
                 f"    ({''.join(r + ', ' for r in regs)}) = _carry"]
        for k, it in enumerate(seg.items):
            lines.append("    " + self._statement(seg, k, it))
        carry = []
        for tid, d in seg.depth.items():
            new = [_reg(tid, j) for j in range(d - 1, 0, -1)] + [_val(tid)]
            old = [_reg(tid, j) for j in range(d, 0, -1)]
            carry += [f"_fix({a}, {b})" for a, b in zip(new, old)]
        carry += ["_key"] if seg.draws else []
        ys = [_val(tid) for tid in seg.stacked]
        lines.append(f"    return ({''.join(v + ', ' for v in carry)}), "
                     f"({''.join(v + ', ' for v in ys)})")
        return "\n".join(lines) + "\n"

    def _statement(self, seg: Segment, k: int, it: Item) -> str:
        op = it.op
        refs = [_ref(seg.reads[(k, j)]) for j in range(len(it.edges))]
        if it.alias:
            return f"{_val(TensorId(op.op_id, 0))} = {refs[0]}"
        kop = self.gen.kernel_ops.get(op.op_id, op)
        outs = ", ".join(_val(TensorId(op.op_id, j)) for j in range(op.num_outputs))
        if isinstance(kop, ops.RandOp):  # the draw the kernel makes, from the carried key
            shape = tuple(int(d) for d in kop.shape.as_static())
            return f"_key, {outs} = _rand(_key, {shape!r}, {_np(kop.dtype)!r})"
        if isinstance(kop, ops.EvalSymbolOp):
            return f"{outs} = _sym({kop.symbol.to_py(it.names)}, {_np(kop.dtype)!r})"
        args = refs + [e.to_py(it.names) if not isinstance(e, int) else str(e)
                       for e in kop.runtime_exprs()]
        comma = "," if op.num_outputs > 1 else ""
        return f"{outs}{comma} = k{op.op_id}({', '.join(args)})"


@dataclass
class _Range:
    """A loop and its counters (what `_python` needs of a `LoopAnalysis`)."""

    loop: Loop
    counters: list[int]


class _Seg:
    """A nest segment's view of its runner, as a report lists it (`failed`, `calls`)."""

    def __init__(self, run: Any, k: int) -> None:
        self.run, self.k = run, k

    @property
    def failed(self) -> str | None:
        return self.run.failed.get(self.k)

    @property
    def calls(self) -> int:
        return int(self.run.calls)


def _np(dt: DataType) -> str:
    """The numpy (and jax) name of a Tempo dtype."""
    return str(NP_OF[dt.name])


def _ref(r: Read) -> str:
    if r.kind == "val":
        assert r.tensor is not None
        return _val(r.tensor)
    if r.kind == "reg":
        assert r.tensor is not None
        return _reg(r.tensor, r.depth)
    return f"{'i' if r.kind == 'inv' else 'x'}{r.index}"
