"""Python loops split into runs of iterations over which the body's conditions are decided.

The schedule guards what differs between iterations with conditions on the loop counter:
a recurrence's first point (`if (d1 == 0): h = init else: h = ...`), a free at the last
iteration (`if (d1 == 63): x = None`), a step skipped at the boundary (`if (d1 <= 62)`).
Tested at every iteration they cost a comparison each, and a dozen of them cost more than
the kernel call they guard. An innermost loop whose range is known when the code is
generated is emitted instead as its runs — at most `MAX_RUNS`, e.g. the first iteration
(straight-line, the counter assigned), the middle as a `for` loop and the last
iteration — each with the conditions that run decides resolved: an `if` whose condition
holds over the whole run becomes its branch, one that never holds disappears. Conditions
that name an enclosing counter are evaluated three-valued (`loops_conds`): `(d0 == 2)
and (d1 == 63)` is False except at the last iteration, where it stays a test.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from tempo.core import ops
from tempo.runtime.loops_conds import UNKNOWN, compile3, evaluate3
from tempo.schedule.tree import Exec, If, Loop, While, walk

MAX_RUNS = 3
"""More runs would copy the body more often than the guards cost (first, middle, last)."""

MAX_EVALS = 8192
"""Conditions x iterations evaluated at most per loop (each ~5 µs when generating code);
a longer loop keeps its guards."""

Run = tuple[range, dict[str, bool | str]]
"""Iterations (counter values) and the conditions decided over all of them (or, as the
rest of the test, partly decided)."""


def split_runs(loop: Loop, conds: list[str], env: dict[str, Any]) -> list[Run] | None:
    """The runs of `loop` (counter values in order, each with the conditions of `conds`
    decided over the whole run), or None when the loop stays whole: its range is not
    known from `env` (the program's bounds), nothing is decided, or there would be more
    than MAX_RUNS runs or evaluations."""
    try:
        lo, hi = (int(eval(compile(s, "<tempo-range>", "eval"),  # noqa: S307 - our own source
                           dict(env), {})) for s in (loop.lo, loop.hi))
    except Exception:  # a counter of an enclosing loop, or a bound known only at run time
        return None
    counters = range(lo, hi, loop.step)
    conds = list(dict.fromkeys(conds))
    if not conds or not counters or len(conds) * len(counters) > MAX_EVALS:
        return None
    codes = [compile3(c) for c in conds]
    runs: list[tuple[list[int], tuple]] = []
    for c in counters:  # (UNKNOWN as None: it has no truth to compare)
        truths = tuple(None if (v := _truth(code, env, loop.counter, c)) is UNKNOWN else v
                       for code in codes)
        if runs and runs[-1][1] == truths:
            runs[-1][0].append(c)
        else:
            runs.append(([c], truths))
            if len(runs) > MAX_RUNS:
                return None
    out: list[Run] = []
    for cs, truths in runs:
        decided: dict[str, bool | str] = {}
        for src, v in zip(conds, truths):
            if v is None:  # still a test: what the run decides of it taken out
                v = residual(src, env, loop.counter, cs)
            if v is not None:
                decided[src] = v
        out.append((range(cs[0], cs[-1] + loop.step, loop.step), decided))
    return out if any(d for _, d in out) else None


def residual(src: str, env: dict[str, Any], counter: str, values: list[int]) -> str | None:
    """Condition `src` with the `and`/`or` operands it decides at every counter value in
    `values` taken out (`(d0 == 2) and (d1 == 63)` at d1 = 63 is `(d0 == 2)`), or None if
    none is."""
    tree = ast.parse(src, mode="eval")
    changed = [False]

    def known(node: ast.expr) -> bool | None:
        code = compile3(ast.unparse(node))
        vs = {None if (v := _truth(code, env, counter, c)) is UNKNOWN else v for c in values}
        return vs.pop() if len(vs) == 1 else None

    def walk_(node: ast.expr) -> ast.expr | bool:
        if not isinstance(node, ast.BoolOp):
            return node
        absorbing = isinstance(node.op, ast.Or)  # True absorbs an or, False an and
        left: list[ast.expr] = []
        for v in node.values:
            w = walk_(v)
            k = w if isinstance(w, bool) else known(w)
            if k is None:
                assert not isinstance(w, bool)
                left.append(w)
                continue
            changed[0] = True
            if k is absorbing:
                return absorbing
        if not left:
            return not absorbing
        return left[0] if len(left) == 1 else ast.BoolOp(node.op, left)

    out = walk_(tree.body)
    if isinstance(out, bool) or not changed[0]:
        return None  # (a whole condition decided is found by split_runs itself)
    return f"({ast.unparse(out)})" if isinstance(out, ast.BoolOp) else ast.unparse(out)


def _truth(code: Any, env: dict[str, Any], counter: str, c: int) -> Any:
    try:
        return evaluate3(code, env, {counter: c})
    except Exception:  # e.g. a division by zero the guard would have skipped
        return UNKNOWN


def body_conditions(gen: Any, loop: Loop) -> list[str] | None:
    """The conditions `gen` (a CodeGen) would test in `loop`'s body: its ifs' and its
    merges' branch conditions; None if the body holds a loop that runs ops (only
    innermost loops split: their bodies are the ones run most, and copies of them are
    short; a loop of frees is one `pop_range` call or a short loop)."""
    conds: list[str] = []
    for n in walk(loop.body):
        if isinstance(n, Loop | While) and any(isinstance(m, Exec) for m in walk(n.body)):
            return None
        if isinstance(n, If):
            conds.append(n.cond)
        elif isinstance(n, Exec) and isinstance(op := gen.sdg.ops[n.op_id], ops.MergeOp):
            names = gen._names(op, n.point)
            conds += [e.cond.to_py(names) for e in gen.sdg.in_edges[op.op_id]
                      if e.cond is not None]
    return conds


def emit_runs(gen: Any, loop: Loop, ind: int) -> bool:
    """Emit `loop` as its runs (False: it stays one loop, emitted as usual)."""
    conds = body_conditions(gen, loop)
    runs = None if conds is None else split_runs(loop, conds, gen.env)
    if runs is None:
        return False
    pad, outer = "    " * ind, gen.resolved
    for its, decided in runs:
        gen.resolved = {**outer, **decided}
        if len(its) == 1:  # straight-line, the counter set for the body's expressions
            gen.inv.assigned(loop.counter)
            gen.lines.append(f"{pad}{loop.counter} = {its[0]}")
            gen.emit(loop.body, ind)
            continue
        step = f", {its.step}" if its.step != 1 else ""
        gen.inv.open(loop.counter, len(gen.lines))
        gen.lines.append(f"{pad}for {loop.counter} in range({its.start}, {its.stop}{step}):")
        gen.block(loop.body, ind + 1)  # (`pass` if every statement was decided away)
        gen.line_ops = gen.inv.close(gen.lines, gen.line_ops, pad)
    gen.resolved = outer
    return True


class Invariants:
    """Expressions the body of a `for` loop uses that do not change in it (a deferred
    block write's pending dict of the loop's prefix, `ps640_0[(d0, )]`), bound to locals
    before the loop: one frame per loop being emitted, with the names its body assigns
    (its counter, counters of runs emitted straight-line, while counters), the line it
    starts at and the expressions bound."""

    def __init__(self) -> None:
        self.frames: list[tuple[list[str], int, dict[str, str]]] = []
        self.made = 0

    def open(self, counter: str, at: int) -> None:
        """A `for` loop over `counter` starts at line `at`."""
        self.frames.append(([counter], at, {}))

    def assigned(self, name: str) -> None:
        """The loop being emitted assigns `name` in its body: nothing using it moves."""
        if self.frames:
            self.frames[-1][0].append(name)

    def use(self, expr: str, uses: str, moving: list[str]) -> str:
        """`expr` as a local bound before the innermost loop being emitted if `uses` (the
        text it depends on) names nothing that loop assigns nor a name in `moving`
        (bounds a boolean bound changes at run time); else `expr`."""
        if not self.frames or any(re.search(rf"\b{n}\b", uses)
                                  for n in (*self.frames[-1][0], *moving)):
            return expr
        names = self.frames[-1][2]
        if expr not in names:
            self.made += 1
            names[expr] = f"_h{self.made}"
        return names[expr]

    def close(self, lines: list[str], line_ops: dict[int, int], pad: str) -> dict[int, int]:
        """The innermost loop ends: its bindings go before its first line; returns the
        line -> op map (line k + 2 is lines[k]) moved to match."""
        _, at, names = self.frames.pop()
        if not names:
            return line_ops
        lines[at:at] = [f"{pad}{n} = {e}" for e, n in names.items()]
        return {k + len(names) if k - 2 >= at else k: v for k, v in line_ops.items()}


def resolved_branches(edges: list[Any], conds: list[str], resolved: dict[str, bool | str]
                      ) -> tuple[list[tuple[Any, str]], bool]:
    """A merge's branches left to test where `resolved` decides some conditions (first
    branch that holds wins): those not decided False, up to the first decided True; and
    whether that one ends the chain (then it needs no test)."""
    out = []
    for e, c in zip(edges, conds):
        v = True if c == "True" else resolved.get(c)
        if v is False:
            continue
        out.append((e, v if isinstance(v, str) else c))
        if v is True:
            return out, True
    return out, False
