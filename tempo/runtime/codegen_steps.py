"""Where a stepping run (`Executor.tick()`, API §7.10) stops: after each iteration of a
top-level loop of the schedule that hands the user something (a sink or a barrier), and
once more for ops after the last such loop. Top-level loops that run only Tempo's own ops
(a symbol's values hoisted into a loop of their own, a batch computed for every point of a
vectorised outer dimension before the loop that sinks it) or only read user data (a
prompt's source hoisted before the decoding loop, weights loaded per layer: accept6 c11,
where 9 of 17 ticks of a generation delivered no token) do not stop: they run inside the
next step, so each tick shows the user progress. Without a loop that sinks, loops that run
another user function (a source, a map UDF) step; without those, every top-level loop that
runs ops steps."""

from __future__ import annotations

from collections.abc import Callable

from tempo.core import ops
from tempo.core.sdg import SDG
from tempo.schedule.tree import Exec, If, Loop, Node, Seq, While

_SEEN = (ops.SinkUDFOp, ops.BarrierOp)
_USER = (ops.SinkUDFOp, ops.MapUDFOp, ops.UDFSourceOp, ops.BarrierOp)


def runs_ops(node: Node, counts: Callable[[Exec], bool] = lambda _: True) -> bool:
    """Whether a schedule subtree executes an op (not only frees) that `counts`."""
    if isinstance(node, Exec):
        return counts(node)
    if isinstance(node, Seq):
        return any(runs_ops(c, counts) for c in node.children)
    if isinstance(node, Loop | While):
        return runs_ops(node.body, counts)
    if isinstance(node, If):
        return runs_ops(node.then, counts) or (node.else_ is not None
                                               and runs_ops(node.else_, counts))
    return False


def step_loops(sdg: SDG, tree: Node) -> set[int]:
    """The ids of the top-level loops whose iterations are steps."""
    top = _top(tree)
    loops = [c for c in top if isinstance(c, Loop) and runs_ops(c.body)]
    for kinds in (_SEEN, _USER):
        user = [c for c in loops if runs_ops(c.body, _user_of(sdg, kinds))]
        if user:
            return {id(c) for c in user}
    return {id(c) for c in loops}


def needs_last_step(tree: Node, steps: set[int]) -> bool:
    """Whether ops run after the last loop that steps (or no loop steps)."""
    top = _top(tree)
    at = [k for k, c in enumerate(top) if id(c) in steps]
    return not at or any(runs_ops(c) for c in top[at[-1] + 1:])


def _top(tree: Node) -> list[Node]:
    """The statements of `run()`'s body in order (nested sequences flattened: their loops
    are top-level loops too)."""
    if not isinstance(tree, Seq):
        return [tree]
    return [n for c in tree.children for n in _top(c)]


def _user_of(sdg: SDG, kinds: tuple[type, ...]) -> Callable[[Exec], bool]:
    return lambda e: _is_user(sdg, e, kinds)


def _is_user(sdg: SDG, e: Exec, kinds: tuple[type, ...]) -> bool:
    op = sdg.ops.get(e.op_id)
    if isinstance(op, ops.RegionOp):
        return any(isinstance(m, kinds) for m in op.body)
    return isinstance(op, kinds)
