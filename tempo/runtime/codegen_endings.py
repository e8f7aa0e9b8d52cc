"""Boolean bounds in generated code (API §7 item 10): the dimension a bool tensor ends,
and where its stop test runs in a loop the scheduler shifted (schedule/loop_tree.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tempo.core import naming, ops
from tempo.core.errors import BoundError, UnsupportedError
from tempo.core.sdg import SDG, TensorId
from tempo.schedule.tree import Exec, If, Loop, Node, Seq, While


@dataclass(frozen=True)
class Ending:
    """Dimension `var` (bound `bound`, at most `maximum`) ends after the first point where
    every element of boolean tensor `tensor` is true (API §7 item 10)."""

    var: str
    bound: str
    maximum: int
    tensor: TensorId
    # the BoundError's text when the maximum is reached with no stop (a maximum the user did
    # not give: `{T: done}` takes the config's); None: the maximum ends the dimension
    exhausted: str | None = None
    site: str = ""

    def raise_exhausted(self) -> None:
        raise BoundError(self.exhausted or "", site=self.site)


NOT_ENDED = 1 << 62  # ENDS value while no stop point has been seen


def ended(x: Any) -> bool:
    """All elements true (a scalar or a batch of per-sequence flags; any backend)."""
    return bool(x.all()) if hasattr(x, "all") else bool(x)


def counter_lag(at: str | None, counter: str) -> int | None:
    """How many iterations of the loop over `counter` run before the point `at` (a shifted
    op's point is `counter - s`); None: not such a point."""
    if at is None:
        return None
    bare = at.replace("(", "").replace(")", "").strip()
    if bare == counter:
        return 0
    m = re.fullmatch(rf"{re.escape(counter)} - (\d+)", bare)
    return int(m.group(1)) if m else None


def execs(node: Node) -> list[Exec]:
    """The Execs under `node`, in the order they are emitted."""
    if isinstance(node, Exec):
        return [node]
    if isinstance(node, Seq):
        return [e for c in node.children for e in execs(c)]
    if isinstance(node, (Loop, While)):
        return execs(node.body)
    if isinstance(node, If):
        return execs(node.then) + (execs(node.else_) if node.else_ is not None else [])
    return []


def lagged_guards(sdg: SDG, loop: Loop, stop: Exec, end: Ending,
                  lag: int) -> dict[int, tuple[str, str]]:
    """The guards of a stop test run `lag` iterations after its point (its component is
    shifted): the iteration finding the stop has also run ops of lesser lag at points past
    the end. Sinks among them after the test are guarded by the end (id(Exec) -> (var, its
    point)); a sink before the test, or an op of greater lag (it would need iterations
    after the stop), is unsupported -- never a sink called past the end."""
    guards: dict[int, tuple[str, str]] = {}
    seen_stop = False
    for ex in execs(loop.body):
        if ex is stop:
            seen_stop = True
            continue
        op = sdg.ops[ex.op_id]
        at = {v.name: p for v, p in zip(op.domain.variables, ex.point)}.get(end.var)
        c = None if at is None else counter_lag(at, loop.counter)
        if at is None or c == lag:
            continue
        sink = isinstance(op, ops.SinkUDFOp)
        if c is None or c > lag or (sink and not seen_stop):
            raise UnsupportedError(
                f"the stop tensor ({naming.tensor_label(sdg, end.tensor)}) of dimension "
                f"{end.var} (bound {end.bound}) is computed {lag} iteration(s) after its "
                f"point, and {naming.op_label(op)} runs where the stop test cannot end it "
                "in time", site=end.site)
        if sink:
            guards[id(ex)] = (end.var, at if at.isidentifier() else f"({at})")
    return guards
