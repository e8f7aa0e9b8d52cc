"""A read of a recurrence at a fixed coordinate reads a recurrence of only the branches
that can hold there (an algebraic rule: exact, no value changes).

PPO with several epochs per rollout keeps its weights over the update domain (i, e): the
rollout over (i, b, t) acts with `w[i, 0]`, the learner over (i, e) reads the rollout, and
`w[i, e + 1]` reads the learner. Inside the loop over i that is one cycle of ops with no
common dimension, which the structural scheduler cannot order (accept6 c13: isl's
scheduler took 106 s at B = 2, and did not finish in 55 minutes at B = 64). At e = 0 only
two of the weights' branches can hold: `i == 0 -> init` and `i > 0 -> w_upd[i - 1, E - 1]`.
A merge of those two over (i) gives `w[i, 0]` without reading the merge over (i, e), so
the cycle is carried by i. The merge over (i, e) stays for its other readers.
"""

from __future__ import annotations

from tempo.core import ops
from tempo.core.index_expr import BooleanIndexValue, ConstBool, IndexSequence, Symbol
from tempo.core.sdg import SDG, Edge, TensorId


def _const(m: object) -> int | None:
    val = m.try_eval() if hasattr(m, "try_eval") else None
    return val if isinstance(val, int) and not isinstance(val, bool) else None


def _fixed(sdg: SDG, op: ops.MergeOp, e: Edge) -> dict[Symbol, int] | None:
    """The coordinates `e` fixes, when it reads `op` at constants along dims its reader
    lacks and along the others at the same variable (`w[i, 0]` from an op over (i, ...))."""
    reader = {v.name for v in sdg.ops[e.sink].domain.variables}
    fixed: dict[Symbol, int] = {}
    for v, m in zip(op.domain.variables, e.expr):
        c = _const(m)
        if c is not None and v.name not in reader:
            fixed[v] = c
        elif not (isinstance(m, Symbol) and m.name == v.name):
            return None
    return fixed or None


def _branches(sdg: SDG, op: ops.MergeOp, fixed: dict[Symbol, int]) -> list[Edge] | None:
    """`op`'s branches at the fixed coordinates: those whose condition may hold there, in
    order, up to the first that always does (None: a branch reads `op` itself)."""
    out: list[Edge] = []
    for b in sdg.in_edges[op.op_id]:
        if b.src.op_id == op.op_id:
            return None
        got = None if b.cond is None else b.cond.partial_eval(fixed).simplify()
        if isinstance(got, ConstBool):
            if not got.const:
                continue
            got = None
        cond = got if got is None or isinstance(got, BooleanIndexValue) else None
        if got is not None and cond is None:
            return None  # (not a condition any more: leave the read alone)
        out.append(Edge(b.sink, len(out), b.src, b.expr.remap(fixed), cond, b.site))
        if cond is None:
            break
    return out


def merge_fixed_reads(sdg: SDG, op: ops.MergeOp) -> bool:
    """Readers of `op` at fixed coordinates read a merge over the other dims instead."""
    if len(sdg.in_edges[op.op_id]) < 2:
        return False  # (a merge of one branch is aliased away instead)
    made: dict[tuple[tuple[str, int], ...], int] = {}
    changed = False
    for e in list(sdg.out_edges.get(op.op_id, ())):
        fixed = _fixed(sdg, op, e)
        if fixed is None:
            continue
        key = tuple(sorted((v.name, c) for v, c in fixed.items()))
        new = made.get(key)
        if new is None:
            branches = _branches(sdg, op, fixed)
            if not branches:
                continue
            dom = op.domain
            for v in fixed:
                dom = dom.remove_dim(v)
            part = ops.MergeOp(op_id=sdg.new_id(), domain=dom, site=op.site, tags=op.tags,
                               shape=op.shape, dtype=op.dtype)
            sdg.add_op(part, [], [op.shape], [op.dtype])
            for b in branches:
                sdg.add_edge(Edge(part.op_id, b.sink_in, b.src, b.expr, b.cond, b.site))
            new = made[key] = part.op_id
        names = {v.name for v in fixed}
        rest = IndexSequence(tuple(m for v, m in zip(op.domain.variables, e.expr)
                                   if v.name not in names))
        # (a second fixed read by the same op is redirected in the next clean-up round:
        # set_in_edges makes new edges)
        edges = [_reading(x, TensorId(new, e.src.output_id), rest) if x is e else x
                 for x in sdg.in_edges[e.sink]]
        sdg.set_in_edges(e.sink, edges)
        changed = True
    return changed


def _reading(e: Edge, src: TensorId, expr: IndexSequence) -> Edge:
    """`e` reading `src` at `expr` instead."""
    return Edge(e.sink, e.sink_in, src, expr, e.cond, e.site)
