"""The SDG rewrite helpers the passes are written with: exact read composition, all-or-
nothing redirection, safe removal, domain reduction, induced subgraphs, validation."""

from __future__ import annotations

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.index_expr import IndexSequence, Slice, Symbol, lift_to_int_ie
from tempo.core.sdg import SDG, RewriteError, TensorId
from tempo.core.sdg_compose import compose
from tempo.core.sdg_validate import problems

t, T = Symbol("t", False, 0), Symbol("T", True, 1)
b = Symbol("b", False, 2)


def _seq(*members: object) -> IndexSequence:
    return IndexSequence(tuple(lift_to_int_ie(m) if isinstance(m, int) else m  # type: ignore[misc]
                               for m in members))


def test_compose_substitutes_points_and_shifts_slices() -> None:
    # y[t] = x[t - 1]; reading y at t + 2 reads x at t + 1
    assert str(compose(_seq(t - 1), [t], _seq(t + 2))) == str(_seq(t + 1))
    # reading y[0:t+1] is reading x[-1:t]: the slice passes through, shifted
    got = compose(_seq(t - 1), [t], _seq(Slice(lift_to_int_ie(0), t + 1)))
    assert got is not None and isinstance(got[0], Slice) and str(got) == "[-1:t]"


def test_compose_refuses_what_it_cannot_say_exactly() -> None:
    whole = Slice(lift_to_int_ie(0), T)
    # y over (t) does not vary along t (reads x[0]): a slice of y is copies of x[0]
    assert compose(_seq(0), [t], _seq(whole)) is None
    # y[t] = x[2t]: a slice of y is a strided read of x, not a slice
    assert compose(_seq(t * 2), [t], _seq(whole)) is None
    # slices must keep their order: y[b, t] = x[t, b] read at [0:B, 0:T]
    both = _seq(Slice(lift_to_int_ie(0), b.as_bound()), whole)
    assert compose(_seq(t, b), [b, t], both) is None


def _program() -> tuple[TempoContext, SDG, dict[str, TensorId]]:
    ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=1)
    ((tt, TT),) = ctx.variables_and_bounds
    with ctx:
        x = RT.from_symbol(tt).cast(dtypes.float32) + 1.0
        y = x.ident()
        point = y * 2.0
        hist = y[0:TT].sum(0)
    ids = {k: v.tensor_id for k, v in
           {"x": x, "y": y, "point": point, "hist": hist}.items()}
    return ctx, ctx.sdg, ids


def test_replace_all_uses_composes_each_read_or_changes_nothing() -> None:
    _, sdg, ids = _program()
    before = sdg.version
    # reads of y become reads of x (y = x at the same point), slices included
    assert sdg.replace_all_uses(ids["y"], ids["x"]) == 2
    assert sdg.readers(ids["y"]) == [] and len(sdg.readers(ids["x"])) == 3
    assert sdg.version > before and problems(sdg) == []
    # x is constant along t if read at 0: the slice read of it cannot be composed
    _, sdg, ids = _program()
    before = sdg.version
    with pytest.raises(RewriteError):
        sdg.replace_all_uses(ids["y"], ids["x"], via=_seq(0))
    assert sdg.version == before and len(sdg.readers(ids["y"])) == 2


def test_remove_ops_refuses_live_and_kept_ops() -> None:
    _, sdg, ids = _program()
    with pytest.raises(RewriteError, match="reads it"):
        sdg.remove_ops([ids["y"].op_id])
    sdg.keep.add(ids["hist"])
    with pytest.raises(RewriteError, match="keeps"):
        sdg.remove_ops([ids["hist"].op_id])
    sdg.remove_ops([ids["point"].op_id])  # nothing reads it and it is not kept
    assert ids["point"].op_id not in sdg.ops and problems(sdg) == []


def test_reduce_domain_refuses_varying_ops_and_drops_read_members() -> None:
    ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=1)
    ((tt, _),) = ctx.variables_and_bounds
    with ctx:
        z = RT.from_symbol(tt).cast(dtypes.float32) * RT.const(np.ones(3, np.float32))
    sdg = ctx.sdg
    mul = sdg.ops[z.tensor_id.op_id]
    with pytest.raises(RewriteError, match="varies"):  # it reads the symbol's cast at t
        sdg.reduce_domain(mul.op_id, tt)
    # a constant over (t), as autodiff makes them, loses t; its reader reads it at []
    const = ops.ConstOp(op_id=sdg.new_id(), domain=mul.domain, value=np.ones(3, np.float32),
                        dtype=dtypes.float32)
    sdg.add_inferred(const, [])
    sdg.set_input(sdg.in_edges[mul.op_id][1], TensorId(const.op_id), _seq(tt))
    sdg.reduce_domain(const.op_id, tt)
    assert len(sdg.ops[const.op_id].domain) == 0
    assert str(sdg.in_edges[mul.op_id][1].expr) == "[]" and problems(sdg) == []


def test_induced_subgraph_cuts_reads_from_outside() -> None:
    _, sdg, ids = _program()
    keep = {ids["y"].op_id, ids["point"].op_id} | {
        e.src.op_id for e in sdg.in_edges[ids["point"].op_id]}
    sub = sdg.induced_subgraph(keep)
    assert set(sub.ops) == keep and sub.in_edges[ids["y"].op_id] == []
    assert ids["x"].op_id in sdg.ops  # the original is untouched
    assert [m for m in problems(sub) if "inputs, its op takes" not in m] == []


def test_topological_order_puts_new_ops_before_their_readers() -> None:
    _, sdg, ids = _program()
    op = ops.UnaryOp(op_id=sdg.new_id(), domain=sdg.ops[ids["x"].op_id].domain, fn="neg")
    sdg.add_inferred(op, [(ids["x"], _seq(Symbol("d0", False, 0)))])
    sdg.set_input(sdg.in_edges[ids["point"].op_id][0], TensorId(op.op_id), _seq(Symbol("d0")))
    order = [o.op_id for o in sdg.topological()]
    assert order.index(op.op_id) < order.index(ids["point"].op_id)
    assert order.index(ids["x"].op_id) < order.index(op.op_id)


def test_validation_names_broken_reads() -> None:
    _, sdg, ids = _program()
    e = sdg.in_edges[ids["point"].op_id][0]
    sdg.set_input(e, e.src, _seq(Symbol("d0"), 0))  # one member too many
    assert any("wrong rank" in p for p in problems(sdg))
    _, sdg, ids = _program()
    sdg.out_edges[ids["x"].op_id].clear()  # raw surgery: readers no longer listed
    assert any("missing from its source's readers" in p for p in problems(sdg))
