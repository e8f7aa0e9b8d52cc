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
from tempo.runtime.loops import Item, LoopAnalysis, Read, Reject, Segment
from tempo.schedule.tree import Exec, If, Loop, Node, Seq, While, walk

Rows = Callable[[Any, int, int], list[Any]]
RunnerFactory = Callable[[str, dict[str, Any], list[int]], Any]
"""(step source, its namespace, the segment's counter values) -> a runner: called with
(invariants, first carries, stacked reads), it returns (last carries, stacked outputs),
or None when the step cannot be compiled."""


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
                 rows: Rows, backend: Any = None) -> None:
        self.gen = gen
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
        if id(loop) in self.plain or id(loop) in gen.ended_loops:
            return False
        inner = walk(loop.body)
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
            self._step_source(seg, c), self._step_namespace(), an.counters[seg.start:seg.stop])
        lines.append(f"{pad}{c} = {self._counter(an, seg.start)}")
        lines.append(f"{pad}_li = ({''.join(s + ', ' for s in seg.invariants)})")
        first: list[str] = []
        for tid, depth in seg.depth.items():  # X at the `depth` iterations before
            parts = seg.items[seg.producer[tid]].parts
            for j in range(depth, 0, -1):
                lines.append(f"{pad}{c} = {self._counter(an, seg.start - j)}")
                lines.append(f"{pad}_c{len(first)} = {self._stored(tid, parts)}")
                first.append(f"_c{len(first)}")
        if seg.draws:
            first.append("_rkey()")
        lines.append(f"{pad}_lc = ({''.join(v + ', ' for v in first)})")
        span = self._range(an, seg.start, seg.stop)
        xs = "".join(f"stack([{s} for {c} in {span}]), " for s in seg.xs)
        lines.append(f"{pad}_lr = {name}(_li, _lc, ({xs}))")
        lines.append(f"{pad}if _lr is None:")
        self._python(an, seg.start, seg.stop, ind + 1)
        lines.append(f"{pad}else:")
        pad += "    "
        lines.append(f"{pad}_lf, _ly = _lr")
        if seg.draws:
            lines.append(f"{pad}_wkey(_lf[-1])")
        for j, (tid, keep) in enumerate(seg.stacked.items()):
            parts = seg.items[seg.producer[tid]].parts
            if keep == list(range(keep[0], keep[-1] + 1)):
                lines.append(f"{pad}_rows = rows(_ly[{j}], {keep[0] - seg.start}, {len(keep)})")
                lines.append(f"{pad}for _n, {c} in enumerate("
                             f"{self._range(an, keep[0], keep[-1] + 1)}):")
            else:
                lines.append(f"{pad}_rows = rows(_ly[{j}], 0, {seg.stop - seg.start})")
                pairs = ", ".join(f"({n - seg.start}, {self._counter(an, n)})" for n in keep)
                lines.append(f"{pad}for _n, {c} in ({pairs}, ):")
            lines.append(f"{pad}    {self._stored(tid, parts)} = _rows[_n]")
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
                gen.frees([free], pad + "    ")
        if seg.deferred:  # frees an enclosing counter decides, tested as the loop would
            lines.append(f"{pad}for {c} in {span}:")
            for node in seg.deferred:
                gen.emit(node, ind + 2)
        return run

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
