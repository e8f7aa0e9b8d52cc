"""Order from a boolean bound's stop test to the work it ends (API §7 item 10).

The schedulers order ops only by their reads. Work over the ended dimension that never
reads the stop tensor could run at every point up to the maximum before the stop test
(acceptance accept4 a16: a sink called 1500 times for 12 points). Scheduling on a copy of
the graph where such work also "reads" the stop at the previous point puts each point
after the test that decides whether it exists; the generated code then skips or bounds
it (runtime/codegen_endings.py). The reads exist only for the scheduler: the executor runs
the real graph, whose kernels never see them."""

from __future__ import annotations

from collections.abc import Iterable

from tempo.core import index_expr as ie
from tempo.core.sdg import SDG, Edge, TensorId


def _ancestors(sdg: SDG, op_id: int) -> set[int]:
    """The ops `op_id` reads, directly or not (itself included)."""
    seen, todo = {op_id}, [op_id]
    while todo:
        for e in sdg.in_edges[todo.pop()]:
            if e.src.op_id not in seen:
                seen.add(e.src.op_id)
                todo.append(e.src.op_id)
    return seen


def _reads_bound(sdg: SDG, op_id: int, bound: str) -> bool:
    """Whether an index expression or condition of a read of `op_id` uses `bound`."""
    for e in sdg.in_edges[op_id]:
        parts = [*e.expr, e.cond] if e.cond is not None else list(e.expr)
        if any(getattr(b, "name", None) == bound for p in parts
               for b in p.bound_symbols_used()):
            return True
    return False


def with_stop_order(sdg: SDG, stops: Iterable[tuple[TensorId, str]]) -> SDG:
    """A copy of `sdg` where every op over all of a stop tensor's dimensions that the stop
    does not need reads the stop at the previous point of the ended dimension `var`
    (`sdg` itself when there is nothing to add)."""
    adds: list[Edge] = []
    for stop, var in stops:
        sop = sdg.ops[stop.op_id]
        names = [v.name for v in sop.domain.variables]
        needed = _ancestors(sdg, stop.op_id)
        bound = next(v for v in sop.domain.variables if v.name == var).as_bound()
        for op in sdg.ops.values():
            if op.op_id in needed:
                continue
            mine = {v.name: v for v in op.domain.variables}
            if var not in mine and set(names) - {var} <= set(mine) and (
                    _reads_bound(sdg, op.op_id, bound.name)
                    or any(b.name == bound.name for x in op.runtime_exprs()
                           for b in x.bound_symbols_used())):
                # made from T itself (a fill of shape (T + 1,)): after the stop ran last
                last = [bound - 1 if n == var else mine[n] for n in names]
                adds.append(Edge(op.op_id, len(sdg.in_edges[op.op_id]), stop,
                                 ie.lift_to_ie_seq(last), None))
                continue
            if var not in mine or not set(names) <= set(mine):
                continue
            at = [mine[n] - 1 if n == var else mine[n] for n in names]
            adds.append(Edge(op.op_id, len(sdg.in_edges[op.op_id]), stop,
                             ie.lift_to_ie_seq(at), mine[var] > 0))
            if _reads_bound(sdg, op.op_id, mine[var].as_bound().name):
                # `x[min(t + 1, T - 1)]`: T is the real end only once the stop ran at
                # every point, so such an op runs after the loop that ends the dimension
                last = [mine[n].as_bound() - 1 if n == var else mine[n] for n in names]
                adds.append(Edge(op.op_id, len(sdg.in_edges[op.op_id]), stop,
                                 ie.lift_to_ie_seq(last), None))
    if not adds:
        return sdg
    out = sdg.copy()
    for e in adds:
        out.add_edge(Edge(e.sink, len(out.in_edges[e.sink]), e.src, e.expr, e.cond))
    return out
