"""A check that a schedule tree runs every read after the point it reads was made, and
before that point was freed: the tree's loops are run over the compile-time bounds,
recording points instead of running ops (no kernel, no store).

isl's scheduler is exact, but the code its AST generator made from a correct schedule once
placed a statement against that schedule (accept6 c13, PPO with epochs: a batch read of the
sampled actions ran before the samples it reads). A wrong order raises at run time when the
point is missing, or, in a store that keeps only its newest point, silently reads another
point's value. This check names such an order at compile time as a bug in Tempo's compiler,
with the user's lines of the reader and the point it reads.

The tree and each op's reads are generated as Python (as the runtime's code is), about a
microsecond per point read. It runs with `validate_pipeline_stages` (test and debug
configs) only, and stops checking past a budget of point reads, with one warning in the
log saying how far it got."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from tempo.core import naming
from tempo.core.errors import ScheduleError
from tempo.core.index_expr.int_nodes import _tempo_no_branch
from tempo.core.index_expr.sequences import Slice
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.schedule.tree import Exec, Free, If, Loop, Node, Seq, While, walk

READ_BUDGET = 500_000  # point reads checked per compile (about half a CPU second)

_log = logging.getLogger(__name__)


class _OverBudget(Exception):
    """The check read more points than its budget: the rest of the tree is not checked."""


class _Found(Exception):
    """A wrong order, raised from the generated code: (op, point, edge index, read point,
    what went wrong)."""


def verify_order(sdg: SDG, tree: Node, bounds: Mapping[str, int],
                 budget: int | None = None) -> bool:
    """Raise ScheduleError at the first read of a point not yet made or already freed (or
    an op run twice at one point); True when the whole tree was checked, False (and a
    warning in the log) when the budget (default READ_BUDGET) ran out first."""
    budget = READ_BUDGET if budget is None else budget
    ops_run = sorted({n.op_id for n in walk(tree) if isinstance(n, Exec)})
    frees = sorted({n.tensor for n in walk(tree) if isinstance(n, Free)},
                   key=lambda t: (t.op_id, t.output_id))
    made: dict[int, set[tuple[int, ...]]] = {i: set() for i in sdg.ops}
    freed: dict[TensorId, set[tuple[int, ...]]] = {t: set() for t in frees}
    env: dict[str, Any] = {"min": min, "max": max, "math": math, "range": range,
                           "_tempo_no_branch": _tempo_no_branch, "_Found": _Found,
                           "_OverBudget": _OverBudget, "_left": [budget]}
    env.update({k: int(v) for k, v in bounds.items()})
    for i in sdg.ops:
        env[f"_M{i}"] = made[i]
    for t in frees:
        env[f"_F{t.op_id}_{t.output_id}"] = freed[t]
    lines: list[str] = []
    for op_id in ops_run:
        lines += _op_checker(sdg, op_id, freed)
    lines.append("def _run():")
    lines += _tree_lines(tree, 1) or ["    pass"]
    try:  # a tree too large or deep for Python's compiler stays unchecked
        code = compile("\n".join(lines), "<schedule check>", "exec")
    except (SyntaxError, RecursionError, MemoryError) as exc:
        _log.warning("schedule order check skipped: its generated code (%d lines for %d ops) "
                     "is too large for Python's compiler (%s); the schedule is unchecked",
                     len(lines), len(ops_run), type(exc).__name__)
        return False
    exec(code, env)  # noqa: S102 - the schedule's own loops and index expressions
    try:
        env["_run"]()
    except _OverBudget:
        points = sum(len(made[i]) for i in ops_run)
        started = sum(1 for i in ops_run if made[i])
        _log.warning("schedule order check stopped early: its budget of %d point reads "
                     "(tempo.schedule.verify.READ_BUDGET) ran out after %d op points (%d of "
                     "the %d ops run) in schedule order; the rest of the schedule is "
                     "unchecked", budget, points, started, len(ops_run))
        return False
    except _Found as f:
        raise _error(sdg, *f.args) from None
    return True


# ---------------------------------------------------------------- generated code
def _tree_lines(node: Node, depth: int) -> list[str]:
    pad = "    " * depth
    if isinstance(node, Seq):
        return [ln for c in node.children for ln in _tree_lines(c, depth)]
    if isinstance(node, Loop):
        body = _tree_lines(node.body, depth + 1) or [pad + "    pass"]
        return [f"{pad}for {node.counter} in range({node.lo}, {node.hi}, {node.step}):",
                *body]
    if isinstance(node, While):
        body = _tree_lines(node.body, depth + 1)  # (the counter step ends the body)
        return [f"{pad}{node.counter} = {node.init}", f"{pad}while {node.cond}:", *body,
                f"{pad}    {node.counter} += {node.step}"]
    if isinstance(node, If):
        out = [f"{pad}if {node.cond}:", *(_tree_lines(node.then, depth + 1)
                                          or [pad + "    pass"])]
        if node.else_ is not None:
            out += [f"{pad}else:", *(_tree_lines(node.else_, depth + 1) or [pad + "    pass"])]
        return out
    if isinstance(node, Exec):
        return [f"{pad}_X{node.op_id}(({''.join(p + ', ' for p in node.point)}))"]
    if isinstance(node, Free):
        t = node.tensor
        return [f"{pad}_F{t.op_id}_{t.output_id}.add(({''.join(p + ', ' for p in node.point)}))"]
    return []  # Offload/Fetch move a point between devices: it stays readable


def _op_checker(sdg: SDG, op_id: int, freed: Mapping[TensorId, set[tuple[int, ...]]]
                ) -> list[str]:
    """`_X<op>(point)`: fails on a read of a point not made or freed, then records the
    point as made."""
    op = sdg.ops[op_id]
    dims = [f"_d_{v.name}" for v in op.domain.variables]
    names = {v.name: d for v, d in zip(op.domain.variables, dims)}
    out = [f"def _X{op_id}(p):",
           "    if _left[0] < 0: raise _OverBudget",
           f"    if p in _M{op_id}: raise _Found({op_id}, p, -1, p, 'runs twice at')",
           "    n = 0"]
    if dims:
        out.append(f"    {''.join(d + ', ' for d in dims)}= p")
    for k, e in enumerate(sdg.in_edges.get(op_id, [])):
        src = sdg.ops[e.src.op_id]
        if len(e.expr.members) != len(src.domain.variables):
            continue  # not a read of the source's points one by one
        pad = "    "
        if e.cond is not None:
            out.append(f"{pad}if {e.cond.to_py(names)}:")
            pad += "    "
        qs = []
        for j, (m, v) in enumerate(zip(e.expr.members, src.domain.variables)):
            ub = src.domain.bound_of(v)
            ub_py = str(ub) if isinstance(ub, int) else ub.to_py(names)
            q = f"_q{j}"
            if isinstance(m, Slice):
                lo, hi = m.bounds_py(names)
                out.append(f"{pad}for {q} in range(max({lo}, 0), min({hi}, {ub_py})):")
            else:
                out.append(f"{pad}{q} = {m.to_py(names)}")
                out.append(f"{pad}if 0 <= {q} < {ub_py}:")
            pad += "    "
            qs.append(q)
        q = f"({''.join(x + ', ' for x in qs)})"
        out.append(f"{pad}n += 1")
        out.append(f"{pad}if {q} not in _M{e.src.op_id}: "
                   f"raise _Found({op_id}, p, {k}, {q}, 'reads a point not yet made:')")
        if e.src in freed:
            out.append(f"{pad}if {q} in _F{e.src.op_id}_{e.src.output_id}: "
                       f"raise _Found({op_id}, p, {k}, {q}, 'reads a point already freed:')")
    out += ["    _left[0] -= n",
            f"    _M{op_id}.add(p)"]
    return out


# ---------------------------------------------------------------- the error
def _error(sdg: SDG, op_id: int, point: tuple[int, ...], k: int, q: tuple[int, ...],
           what: str) -> ScheduleError:
    op = sdg.ops[op_id]
    at = naming.point_word({v.name: p for v, p in zip(op.domain.variables, point)})
    reader = naming.op_label(op, sdg.names)
    if k < 0:
        msg = f"{reader} {what} ({at})"
    else:
        e: Edge = sdg.in_edges[op_id][k]
        src = sdg.ops[e.src.op_id]
        where = naming.point_word({v.name: p for v, p in zip(src.domain.variables, q)})
        msg = f"{reader} at ({at}) {what} {naming.tensor_label(sdg, e.src)} at ({where})"
    return ScheduleError(f"bug in Tempo's compiler: the generated schedule is in the wrong "
                         f"order: {msg}. Please report it with the program", site=op.site)
