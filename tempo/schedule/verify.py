"""A check that a schedule tree runs every read after the point it reads was made, and
before that point was freed: the tree's loops are run over the compile-time bounds,
recording points instead of running ops (no kernel, no store).

isl's scheduler is exact, but the code its AST generator made from a correct schedule once
placed a statement against that schedule (accept6 c13, PPO with epochs: a batch read of the
sampled actions ran before the samples it reads). A wrong order raises at run time when the
point is missing, or, in a store that keeps only its newest point, silently reads another
point's value. This check names such an order at compile time as a bug in Tempo's compiler,
with the user's lines of the reader and the point it reads. It costs time in the points run
times the points they read, so it runs with `validate_pipeline_stages` (test and debug
configs) only, and stops checking past a budget of reads."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import CodeType
from typing import Any

from tempo.core import naming
from tempo.core.errors import ScheduleError
from tempo.core.index_expr.int_nodes import _tempo_no_branch
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.schedule.tree import Exec, Free, If, Loop, Node, Seq, While

READ_BUDGET = 2_000_000  # point reads checked per compile (a few seconds of Python)
_GLOBALS: dict[str, Any] = {"__builtins__": {}, "min": min, "max": max, "math": math,
                            "slice": slice, "_tempo_no_branch": _tempo_no_branch}


class _OverBudget(Exception):
    """The check read more points than its budget: the rest of the tree is not checked."""


@dataclass(frozen=True)
class _Read:
    """One input edge of an op, as compiled Python over the op's dims and the bounds."""

    edge: Edge
    cond: CodeType | None
    expr: CodeType
    src_bounds: tuple[CodeType, ...]


def verify_order(sdg: SDG, tree: Node, bounds: Mapping[str, int],
                 budget: int = READ_BUDGET) -> bool:
    """Raise ScheduleError at the first read of a point not yet made or already freed (or
    an op run twice at one point); True when the whole tree was checked, False when the
    budget ran out first."""
    return _Checker(sdg, bounds, budget).run(tree)


class _Checker:
    def __init__(self, sdg: SDG, bounds: Mapping[str, int], budget: int) -> None:
        self.sdg, self.bounds, self.budget = sdg, dict(bounds), budget
        self.made: dict[int, set[tuple[int, ...]]] = {}
        self.freed: dict[TensorId, set[tuple[int, ...]]] = {}
        self.code: dict[str, CodeType] = {}
        self.reads: dict[int, list[_Read]] = {}

    # ------------------------------------------------------------------ tree walking
    def run(self, tree: Node) -> bool:
        try:
            self._node(tree, dict(self.bounds))
        except _OverBudget:
            return False
        return True

    def _eval(self, src: str, env: dict[str, int]) -> Any:
        c = self.code.get(src)
        if c is None:
            c = self.code[src] = compile(src, "<schedule>", "eval")
        return eval(c, _GLOBALS, env)  # noqa: S307 - the schedule's own index expressions

    def _node(self, node: Node, env: dict[str, int]) -> None:
        if isinstance(node, Seq):
            for c in node.children:
                self._node(c, env)
        elif isinstance(node, Loop):
            lo, hi = self._eval(node.lo, env), self._eval(node.hi, env)
            for v in range(lo, hi, node.step):
                env[node.counter] = v
                self._node(node.body, env)
        elif isinstance(node, While):
            env[node.counter] = self._eval(node.init, env)
            while self._eval(node.cond, env):
                self._node(node.body, env)
                env[node.counter] += node.step
        elif isinstance(node, If):
            if self._eval(node.cond, env):
                self._node(node.then, env)
            elif node.else_ is not None:
                self._node(node.else_, env)
        elif isinstance(node, Exec):
            self._exec(node.op_id, tuple(int(self._eval(p, env)) for p in node.point))
        elif isinstance(node, Free):
            self.freed.setdefault(node.tensor, set()).add(
                tuple(int(self._eval(p, env)) for p in node.point))
        # Offload/Fetch move points between devices: the point stays readable

    # ------------------------------------------------------------------ one op at a point
    def _exec(self, op_id: int, point: tuple[int, ...]) -> None:
        made = self.made.setdefault(op_id, set())
        if point in made:
            self._fail(op_id, point, None, point, "runs twice at")
        reads = self.reads.get(op_id)
        if reads is None:
            reads = self.reads[op_id] = self._compile_reads(op_id)
        if reads:
            op = self.sdg.ops[op_id]
            env = {**self.bounds, **{v.name: p for v, p in zip(op.domain.variables, point)}}
            for r in reads:
                if r.cond is not None and not eval(r.cond, _GLOBALS, env):  # noqa: S307
                    continue
                src = r.edge.src
                src_made = self.made.get(src.op_id, set())
                gone = self.freed.get(src, set())
                for q in self._points(r, env):
                    if q not in src_made:
                        self._fail(op_id, point, r.edge, q, "reads a point not yet made:")
                    if q in gone:
                        self._fail(op_id, point, r.edge, q, "reads a point already freed:")
        made.add(point)

    def _points(self, r: _Read, env: dict[str, int]) -> Iterator[tuple[int, ...]]:
        """The source points read (inside the source's domain: reads outside it dropped
        the reader's point before scheduling, or are a padded read the codegen fills)."""
        members = eval(r.expr, _GLOBALS, env)  # noqa: S307
        axes: list[range | tuple[int]] = []
        for m, ub in zip(members, r.src_bounds):
            hi = eval(ub, _GLOBALS, env)  # noqa: S307
            if isinstance(m, slice):
                axes.append(range(max(int(m.start), 0), min(int(m.stop), hi)))
            elif 0 <= int(m) < hi:
                axes.append((int(m),))
            else:
                return
        n = math.prod(len(a) for a in axes)
        self.budget -= n
        if self.budget < 0:
            raise _OverBudget
        yield from itertools.product(*axes)

    def _compile_reads(self, op_id: int) -> list[_Read]:
        out = []
        for e in self.sdg.in_edges.get(op_id, []):
            src = self.sdg.ops[e.src.op_id]
            members = e.expr.members
            if len(members) != len(src.domain.variables):
                continue  # not a read of the source's points one by one
            cond = None if e.cond is None else compile(e.cond.to_py(), "<read>", "eval")
            expr = compile("(" + "".join(f"{m.to_py()}, " for m in members) + ")",
                           "<read>", "eval")
            ubs = tuple(compile(_py(src.domain.bound_of(v)), "<read>", "eval")
                        for v in src.domain.variables)
            out.append(_Read(e, cond, expr, ubs))
        return out

    # ------------------------------------------------------------------ the error
    def _fail(self, op_id: int, point: tuple[int, ...], e: Edge | None,
              q: tuple[int, ...], what: str) -> None:
        sdg = self.sdg
        op = sdg.ops[op_id]
        at = naming.point_word({v.name: p for v, p in zip(op.domain.variables, point)})
        reader = naming.op_label(op, sdg.names)
        if e is None:
            msg = f"{reader} {what} ({at})"
        else:
            src = sdg.ops[e.src.op_id]
            where = naming.point_word({v.name: p for v, p in zip(src.domain.variables, q)})
            msg = (f"{reader} at ({at}) {what} {naming.tensor_label(sdg, e.src)} at "
                   f"({where})")
        raise ScheduleError(
            f"bug in Tempo's compiler: the generated schedule is in the wrong order: {msg}. "
            "Please report it with the program",
            site=op.site)


def _py(x: Any) -> str:
    return str(x) if isinstance(x, int) else x.to_py()

