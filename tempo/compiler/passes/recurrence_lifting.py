"""Lifting running sums out of recurrences: `acc[0] = b; acc[t] = acc[t-1] + x[t]` is
`acc[t] = b + cumsum(x[1:T])[t-1]` for t >= 1. No recurrence over t is left: every point
of acc is computed from x alone, so the scheduler no longer chains acc's points, and the
sum is one batched kernel. Exact only for integer sums: a float cumsum kernel sums in its
own order and precision (torch on CPU differs from sequential float32 adds), so float
recurrences stay as they are."""

from __future__ import annotations

from typing import Any

import islpy as isl

from tempo.core import ops
from tempo.core.domain import Domain
from tempo.core.dtype import dtypes
from tempo.core.index_expr import BooleanIndexValue, IndexSequence, Slice, Symbol, lift_to_int_ie
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.sdg_compose import compose


def lift_cumsum(sdg: SDG, m: ops.MergeOp) -> bool:
    es = sdg.in_edges[m.op_id]
    out = TensorId(m.op_id, 0)
    dt = sdg.tensors[out].dtype
    if len(es) != 2 or not dtypes.is_integer(dt) or ops.accumulate_dtype(dt) != dt:
        return False  # (narrow ints would need a cast to the accumulation dtype and back)
    if not m.domain.has_default_bounds():
        return False
    base, step = es
    t = _step_var(base.cond, step.cond, m.domain)
    if t is None or t.name in {v.name for v in base.expr.vars_used()} or base.cond is None:
        return False
    if sdg.bound_defs.get(t.as_bound(), 0) < 2:
        return False  # x[1:T] must not be empty
    x_read = _running_sum_input(sdg, m, step, t)
    if x_read is None:
        return False
    pos = m.domain.find_variable_index(t)
    rest = m.domain.remove_dim(t)
    whole = Slice(lift_to_int_ie(1), t.as_bound())
    outer = IndexSequence(tuple(whole if k == pos else v for k, v in enumerate(m.domain.variables)))
    xs = compose(x_read.expr, m.domain.variables, outer)
    if xs is None:
        return False
    _rewrite(sdg, m, base, step, t, rest, (x_read.src, xs))
    return True


def _rewrite(sdg: SDG, m: ops.MergeOp, base: Edge, step: Edge, t: Symbol, rest: Domain,
             xs: tuple[TensorId, IndexSequence]) -> None:
    """acc's step branch reads `b + cumsum(x[1:T])[t-1]` (new ops) instead of the add."""
    def new(op_cls: type[ops.Op], domain: Domain, reads: list, **kw: Any) -> TensorId:
        op = op_cls(op_id=sdg.new_id(), domain=domain, site=m.site, tags=m.tags, **kw)
        return TensorId(sdg.add_inferred(op, reads).op_id, 0)

    rest_basis = rest.basis_expr
    csum = new(ops.CumsumOp, rest, [xs], dim=0)
    t_dom = Domain.from_vars([t])
    index = new(ops.EvalSymbolOp, t_dom, [], symbol=t - 1, dtype=dtypes.default_int)
    basis = m.domain.basis_expr
    picked = new(ops.IndexSelectOp, m.domain, [(csum, rest_basis), (index, IndexSequence((t,)))],
                 dim=0)
    total = new(ops.BinaryOp, m.domain, [(base.src, base.expr), (picked, basis)], fn="add")
    sdg.set_input(step, total, basis)


def _running_sum_input(sdg: SDG, m: ops.MergeOp, step: Edge, t: Symbol) -> Edge | None:
    """The read of x when the step branch is `add(m[.., t-1, ..], x)` read at m's own point,
    x does not depend on m, and nothing else reads the add."""
    add = sdg.ops[step.src.op_id]
    if not (isinstance(add, ops.BinaryOp) and add.fn == "add") or step.expr != m.domain.basis_expr:
        return None
    if len(sdg.readers(step.src)) != 1 or sdg.is_kept(add.op_id):
        return None
    pos = m.domain.find_variable_index(t)
    prev = m.domain.basis_expr.replace_idx(pos, t - 1)
    a, b = sdg.in_edges[add.op_id]
    for carry, x in ((a, b), (b, a)):
        if carry.src.op_id == m.op_id and carry.expr == prev and carry.cond is None:
            same = sdg.read_shape(x) == sdg.tensors[TensorId(m.op_id, 0)].shape
            ok_dtype = sdg.tensors[x.src].dtype == sdg.tensors[TensorId(m.op_id, 0)].dtype
            if x.cond is None and same and ok_dtype and not _depends_on(sdg, x.src.op_id, m.op_id):
                return x
    return None


def _depends_on(sdg: SDG, start: int, target: int) -> bool:
    seen, work = {start}, [start]
    while work:
        i = work.pop()
        if i == target:
            return True
        for e in sdg.in_edges[i]:
            if e.src.op_id not in seen:
                seen.add(e.src.op_id)
                work.append(e.src.op_id)
    return False


def _step_var(base: BooleanIndexValue | None, step: BooleanIndexValue | None,
              domain: Domain) -> Symbol | None:
    """t when the base branch holds exactly at t = 0 and the step branch at t >= 1."""
    if base is None or step is None:
        return None
    used = base.vars_used() | step.vars_used()
    if len(used) != 1 or base.bound_symbols_used() or step.bound_symbols_used():
        return None
    (t,) = used
    if not domain.has_dim(t):
        return None
    space = f"[{t.name}] : {t.name} >= 0"
    holds = [isl.Set(f"{{ {space} and {c.to_isl()} }}") for c in (base, step)]
    want = [isl.Set(f"{{ {space} and {t.name} = 0 }}"), isl.Set(f"{{ {space} and {t.name} >= 1 }}")]
    return t if all(h.is_equal(w) for h, w in zip(holds, want)) else None
