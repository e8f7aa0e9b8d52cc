"""Order from a boolean bound's stop test to the work it ends (API §7 item 10).

The schedulers order ops only by their reads. Work over the ended dimension that never
reads the stop tensor could run at every point up to the maximum before the stop test
(acceptance accept4 a16: a sink called 1500 times for 12 points). Scheduling on a copy of
the graph where such work also "reads" the stop at the previous point puts each point
after the test that decides whether it exists; the generated code then skips or bounds
it (runtime/codegen_endings.py). The reads exist only for the scheduler: the executor runs
the real graph, whose kernels never see them.

Ops that use the ended bound's value (the divisor of `x[0:T].mean()`, `arange(T)`) must
run after the loop that fixes it, once per point of the stop's other dims (each i of a
stop over (i, t) has its own T): `spread_ended_bounds` gives them those dims (a real graph
change) and `with_stop_order` makes them read the whole stop (acceptance accept6 c07/c08)."""

from __future__ import annotations

from collections.abc import Iterable

from tempo.core import index_expr as ie
from tempo.core.op_base import Op
from tempo.core.sdg import SDG, Edge, TensorId


def _same_point_ancestors(sdg: SDG, op_id: int, names: set[str]) -> set[int]:
    """The ops `op_id` reads at its own point of the dims `names` (an optimizer step reads
    the previous iteration's loss: not at its own point), directly or not."""
    seen, todo = {op_id}, [op_id]
    while todo:
        for e in sdg.in_edges[todo.pop()]:
            src = sdg.ops[e.src.op_id].domain.variables
            same = all(v.name not in names or (isinstance(m, ie.Symbol) and m.name == v.name)
                       for v, m in zip(src, e.expr))
            if same and e.src.op_id not in seen:
                seen.add(e.src.op_id)
                todo.append(e.src.op_id)
    return seen


def uses_bound(op: Op, bound: str) -> bool:
    """Whether the op's kernel takes the value of bound `bound` (an eval_symbol of T, a
    shape (T,) of a creation or reshape): an ended bound's value is known at run time only."""
    return any(not isinstance(e, int) and any(b.name == bound for b in e.bound_symbols_used())
               for e in op.runtime_exprs())


def _stop_dims(sdg: SDG, stop: TensorId, var: str) -> tuple[list[ie.Symbol], ie.Symbol]:
    dims = list(sdg.ops[stop.op_id].domain.variables)
    return [v for v in dims if v.name != var], next(v for v in dims if v.name == var)


def spread_ended_bounds(sdg: SDG, stops: Iterable[tuple[TensorId, str]]) -> SDG:
    """A copy of `sdg` where every op using an ended bound (`x[0:T].mean()`'s T, the
    arange(T) of a discounted sum) varies along the stop tensor's other dims, as that bound
    does (`{T: done}` with done over (i, t): each i has its own T); readers without such a
    dim get it too. `sdg` itself when nothing needs it."""
    out = sdg
    for stop, var in stops:
        outer, tvar = _stop_dims(sdg, stop, var)
        bound = tvar.as_bound().name
        users = [i for i, op in out.ops.items() if uses_bound(op, bound)]
        for v in outer:
            grow: set[int] = set()
            todo = [i for i in users if not out.ops[i].domain.has_dim(v)]
            while todo:
                x = todo.pop()
                if x not in grow:
                    grow.add(x)
                    todo += [e.sink for e in out.out_edges.get(x, [])
                             if not out.ops[e.sink].domain.has_dim(v)]
            if not grow:
                continue
            if out is sdg:
                out = sdg.copy()
            out.extend_domain(grow, v)
    return out


def check_ragged_reads(sdg: SDG, stops: Iterable[tuple[TensorId, str]]) -> None:
    """Refuse a read across the points of a stop's other dims that also runs along the
    ended dim: with `{T: done}` and done over (i, t), each i has its own T, so
    `g[0:I, 0:T]` (a gradient summing every (i, t) point into a parameter over ()) or
    `g[0:I, t]` by an op over t alone covers no rectangle, and T there is only the last
    i's. Such a program crashed at run time (a KeyError of a point one episode never
    made) or summed the wrong points (accept6b failure 3): an UnsupportedError at the
    line that made the read instead."""
    for stop, var in stops:
        outer, tvar = _stop_dims(sdg, stop, var)
        bound = tvar.as_bound().name
        for op in sdg.ops.values():
            mine = {v.name for v in op.domain.variables}
            for e in sdg.in_edges[op.op_id]:
                src = [v.name for v in sdg.ops[e.src.op_id].domain.variables]
                if var not in src or len(e.expr) != len(src):
                    continue
                m = e.expr[src.index(var)]
                along = var in mine or any(b.name == bound for b in m.bound_symbols_used()) \
                    or var in {u.name for u in m.vars_used()}
                across = [v for v in outer if v.name in src and v.name not in mine]
                if along and across:
                    _ragged_error(sdg, e, op, across[0], tvar, var)


def _ragged_error(sdg: SDG, e: Edge, op: Op, across: ie.Symbol, tvar: ie.Symbol,
                  var: str) -> None:
    from tempo.core import naming
    from tempo.core.errors import UnsupportedError

    src = naming.tensor_label(sdg, e.src)
    bound = tvar.as_bound().name
    raise UnsupportedError(
        f"{naming.op_label(op)} reads {src} at [{naming.index_word(e.expr)}]: across the "
        f"points of {across.name} and along {var}, whose bound {bound} is a boolean bound "
        f"that ends separately for each {across.name} (the stop tensor varies along "
        f"{across.name}), so those points form no rectangle. Not supported: compute it per "
        f"{across.name} first (e.g. a sum over {var} at each {across.name}, then over "
        f"{across.name}); a gradient through such a dimension into a tensor that does not "
        f"vary along {across.name} is not supported either", site=e.site or op.site)


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
    """Whether an index expression or condition of a read of `op_id` uses `bound` (an op
    outside the ended dim reading `x[T - 1]`)."""
    for e in sdg.in_edges[op_id]:
        parts = [*e.expr, e.cond] if e.cond is not None else list(e.expr)
        if any(getattr(b, "name", None) == bound for p in parts
               for b in p.bound_symbols_used()):
            return True
    return False


def with_stop_order(sdg: SDG, stops: Iterable[tuple[TensorId, str]]) -> SDG:
    """A copy of `sdg` where every op over all of a stop tensor's dimensions that the stop
    does not need reads the stop at the previous point of the ended dimension `var`, and
    every op outside `var` using its bound (in its kernel or in a read) reads all of the
    stop, 0:T, at its own point of the other dims (it takes T's final value) (`sdg` itself
    when there is nothing to add)."""
    adds: list[Edge] = []
    for stop, var in stops:
        sop = sdg.ops[stop.op_id]
        names = [v.name for v in sop.domain.variables]
        needed = _ancestors(sdg, stop.op_id)
        outer, tvar = _stop_dims(sdg, stop, var)
        here = _same_point_ancestors(sdg, stop.op_id, {v.name for v in outer})
        for op in sdg.ops.values():
            mine = {v.name: v for v in op.domain.variables}
            bname = tvar.as_bound().name
            if (op.op_id not in here and var not in mine and all(v.name in mine for v in outer)
                    and (uses_bound(op, bname) or _reads_bound(sdg, op.op_id, bname))):
                whole = [ie.slice_(0, tvar.as_bound()) if n == var else mine[n] for n in names]
                adds.append(Edge(op.op_id, len(sdg.in_edges[op.op_id]), stop,
                                 ie.lift_to_ie_seq(whole), None))
                continue
            if op.op_id in here or var not in mine or not set(names) <= set(mine):
                continue
            if op.op_id not in needed:
                at = [mine[n] - 1 if n == var else mine[n] for n in names]
                adds.append(Edge(op.op_id, len(sdg.in_edges[op.op_id]), stop,
                                 ie.lift_to_ie_seq(at), mine[var] > 0))
            # an op the stop needs only at other points of its outer dims (the returns of
            # iteration i - 1 feed the weights of iteration i, hence its episode's end) can
            # still wait for its own iteration's end: the stop at i does not need it at i
            if _reads_bound(sdg, op.op_id, bname) or uses_bound(op, bname):
                # `x[min(t + 1, T - 1)]`, `arange(T - t)`: T is the real end only once the
                # stop ran at every point, so such an op runs after the loop that ends the
                # dimension (an arange(T - t) run inside it took T's cap: accept8 e10)
                last = [tvar.as_bound() - 1 if n == var else mine[n] for n in names]
                adds.append(Edge(op.op_id, len(sdg.in_edges[op.op_id]), stop,
                                 ie.lift_to_ie_seq(last), None))
        adds += _whole_range_reads(sdg, var, tvar)
    if not adds:
        return sdg
    out = sdg.copy()
    for e in adds:
        out.add_edge(Edge(e.sink, len(out.in_edges[e.sink]), e.src, e.expr, e.cond))
    return out


def _whole_range_reads(sdg: SDG, var: str, tvar: ie.Symbol) -> list[Edge]:
    """A read of a point that names the ended bound (`r[i, T - 1]`, the episode's last value)
    also "reads" the whole range `0:T` of the ended dimension, for the scheduler only: it
    places frees with T at its maximum, where `T - 1` is the last point, so the points
    before it were freed after their last other read and the real `T - 1` (known at run
    time) was gone (accept8 e12: KeyError in the store)."""
    bname = tvar.as_bound().name
    out: list[Edge] = []
    for op_id, edges in sdg.in_edges.items():
        for e in edges:
            src = [v.name for v in sdg.ops[e.src.op_id].domain.variables]
            if var not in src or len(e.expr) != len(src):
                continue
            k = src.index(var)
            m = e.expr[k]
            if isinstance(m, ie.Slice) or not any(b.name == bname
                                                  for b in m.bound_symbols_used()):
                continue
            whole = list(e.expr)
            whole[k] = ie.slice_(0, tvar.as_bound())
            out.append(Edge(op_id, len(edges), e.src, ie.lift_to_ie_seq(whole), e.cond))
    return out
