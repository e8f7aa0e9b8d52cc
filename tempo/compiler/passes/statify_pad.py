"""Statify the backward's pad-backs (ARCHITECTURE §5.4): the gradient of a read `x[lo:hi]`
whose length L grows with a loop variable reaches the sources as `index_add(zeros(N),
arange(L) + lo, g)` — the slice's gradient placed at its rows of the full bound N. For the
gradients of sums and maxima, `g` is itself made at the step's length (an `expand` of the
sum's gradient to L rows, a `scatter_add` into L zero rows), so every step compiles new
shapes on jax.

Here the pad-back of those two is built at the static length N directly:
`where(lo <= arange(N) < lo + L, g0, 0)` for an expand of `g0`, and `scatter_add(zeros(N),
idx + lo, v)` for a scatter. Together with the tiled `g[t:T]` reads (statify_reduce) the
backward of a growing sum or max runs on shapes that do not depend on the step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tempo.core import ops
from tempo.core.domain import Domain
from tempo.core.dtype import dtypes
from tempo.core.index_expr import IndexExpr, IndexSequence
from tempo.core.op_base import Op
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import Shape


def run(sdg: SDG) -> None:
    for op in list(sdg.ops.values()):
        if op.op_id in sdg.ops and isinstance(op, ops.IndexAddOp) and op.alpha == 1.0 and (
                not sdg.is_kept(op.op_id)):
            _pad_back(sdg, op)


def _varying(d: Any) -> bool:
    return isinstance(d, IndexExpr) and bool(d.vars_used())


def _text(d: Any) -> str:
    return str(d.simplify()) if isinstance(d, IndexExpr) else str(d)


def _input(sdg: SDG, op_id: int, k: int) -> Edge:
    return next(e for e in sdg.in_edges[op_id] if e.sink_in == k)


def _through_casts(sdg: SDG, e: Edge) -> Op:
    op = sdg.ops[e.src.op_id]
    while isinstance(op, ops.CastOp | ops.IdentOp):
        op = sdg.ops[_input(sdg, op.op_id, 0).src.op_id]
    return op


def _const(sdg: SDG, e: Edge) -> float | None:
    op = _through_casts(sdg, e)
    if isinstance(op, ops.ConstOp) and op.value.size == 1:
        return float(op.value.reshape(()))
    return None


def _range(sdg: SDG, e: Edge) -> tuple[Edge | None, Any] | None:
    """`e` as `arange(L) + lo` (as `creation.arange` records it): (the edge of `lo`, None
    for 0; the length L)."""
    op = _through_casts(sdg, e)
    start = None
    if isinstance(op, ops.BinaryOp) and op.fn == "add":
        a, b = _input(sdg, op.op_id, 0), _input(sdg, op.op_id, 1)
        if tuple(sdg.read_shape(b)) != ():
            return None
        start, op = (None if _const(sdg, b) == 0 else b), _through_casts(sdg, a)
    if not (isinstance(op, ops.BinaryOp) and op.fn == "sub"
            and _const(sdg, _input(sdg, op.op_id, 1)) == 1):
        return None
    cs = _through_casts(sdg, _input(sdg, op.op_id, 0))
    if not (isinstance(cs, ops.CumsumOp) and cs.dim == 0):
        return None
    ones = _through_casts(sdg, _input(sdg, cs.op_id, 0))
    if not (isinstance(ones, ops.FillOp) and ones.value == 1 and len(ones.shape) == 1):
        return None
    return start, tuple(ones.shape)[0]


def _zeros(sdg: SDG, e: Edge) -> ops.FillOp | None:
    op = sdg.ops[e.src.op_id]
    return op if isinstance(op, ops.FillOp) and op.value == 0 else None


def _only_read_by(sdg: SDG, tid: TensorId, sink: int) -> bool:
    return not sdg.is_kept(tid.op_id) and all(r.sink == sink for r in sdg.readers(tid))


def _pad_back(sdg: SDG, op: ops.IndexAddOp) -> None:
    base_e, idx_e, src_e = (_input(sdg, op.op_id, k) for k in range(3))
    base, d = _zeros(sdg, base_e), op.dim
    src_shape = tuple(sdg.read_shape(src_e))
    out_shape = tuple(sdg.tensors[TensorId(op.op_id, 0)].shape)
    rng = _range(sdg, idx_e)
    if base is None or rng is None or any(_varying(x) for x in out_shape) or not (
            _varying(src_shape[d]) and _text(rng[1]) == _text(src_shape[d])):
        return
    src = sdg.ops[src_e.src.op_id]
    if src_e.cond is not None or not _only_read_by(sdg, src_e.src, op.op_id) or str(
            src_e.expr) != str(op.domain.basis_expr):
        return
    new = _Builder(sdg, op)
    start, length = rng
    if isinstance(src, ops.ExpandOp):
        g0 = _input(sdg, src.op_id, 0)
        g_shape = tuple(sdg.read_shape(g0))
        if len(g_shape) != len(out_shape) or g_shape[d] != 1 or any(
                j != d and _text(g) not in ("1", _text(o))
                for j, (g, o) in enumerate(zip(g_shape, out_shape))):
            return
        got = new.masked(g0, start, length, len(out_shape), d)
        full = tuple(int(x.evaluate(sdg.bound_defs)) if isinstance(x, IndexExpr) else int(x)
                     for x in out_shape)
        if tuple(sdg.tensors[got].shape) != full:  # the expand broadcast other dims too
            got = new.add(ops.ExpandOp, [new.here(got)], shape=Shape.from_(full))
    elif isinstance(src, ops.ScatterAddOp) and src.dim == d and _zeros(
            sdg, _input(sdg, src.op_id, 0)) is not None:
        got = new.scatter(src, start)
    else:
        return
    sdg.replace_all_uses(TensorId(op.op_id, 0), got)
    dead = [op.op_id]
    while dead:
        dead_ids = {i for i in dead if i in sdg.ops}
        inputs = {e.src.op_id for i in dead_ids for e in sdg.in_edges[i]}
        sdg.remove_ops(list(dead_ids))
        dead = [i for i in inputs if i in sdg.ops and not sdg.out_edges.get(i)
                and not sdg.is_kept(i) and not isinstance(sdg.ops[i], ops.UDFSourceOp)]


class _Builder:
    """New ops at the pad-back's point (reads of other ops at the same point)."""

    def __init__(self, sdg: SDG, at: ops.IndexAddOp) -> None:
        self.sdg, self.at = sdg, at
        n = tuple(sdg.tensors[TensorId(at.op_id, 0)].shape)[at.dim]  # the static bound N
        self.n = int(n.evaluate(sdg.bound_defs)) if isinstance(n, IndexExpr) else int(n)

    def here(self, tid: TensorId) -> tuple[TensorId, IndexSequence]:
        return tid, self.sdg.ops[tid.op_id].domain.basis_expr

    def add(self, cls: type[Op], reads: list[tuple[TensorId, IndexSequence]], *,
            domain: Domain | None = None, **params: Any) -> TensorId:
        op = cls(op_id=self.sdg.new_id(), domain=self.at.domain if domain is None else domain,
                 site=self.at.site, **params)
        self.sdg.add_inferred(op, reads)
        return TensorId(op.op_id, 0)

    def const(self, value: np.ndarray, dt: Any) -> TensorId:
        return self.add(ops.ConstOp, [], domain=Domain.empty(), value=value, dtype=dt)

    def start(self, start: Edge | None) -> tuple[TensorId, IndexSequence]:
        it = dtypes.default_int
        if start is None:
            return self.const(np.zeros((), dtypes.to_np(it)), it), IndexSequence(())
        if self.sdg.tensors[start.src].dtype != it:
            return self.here(self.add(ops.CastOp, [(start.src, start.expr)], dtype=it))
        return start.src, start.expr

    def masked(self, g0: Edge, start: Edge | None, length: Any, ndim: int, d: int
               ) -> TensorId:
        """where(lo <= arange(N) < lo + L, g0, 0), arange laid along dim d."""
        it = dtypes.default_int
        shape = [1] * ndim
        shape[d] = self.n
        rows = self.const(np.arange(self.n, dtype=dtypes.to_np(it)).reshape(shape), it)
        lo = self.start(start)
        n = self.add(ops.EvalSymbolOp, [], symbol=length, dtype=it)
        hi = self.add(ops.BinaryOp, [lo, self.here(n)], fn="add")
        empty = IndexSequence(())
        ge = self.add(ops.BinaryOp, [(rows, empty), lo], fn="ge")
        lt = self.add(ops.BinaryOp, [(rows, empty), self.here(hi)], fn="lt")
        keep = self.add(ops.BinaryOp, [self.here(ge), self.here(lt)], fn="and")
        dt = self.sdg.tensors[g0.src].dtype
        zero = self.const(np.zeros((), dtypes.to_np(dt)), dt)
        return self.add(ops.WhereOp, [self.here(keep), (g0.src, g0.expr), (zero, empty)])

    def scatter(self, src: ops.ScatterAddOp, start: Edge | None) -> TensorId:
        """scatter_add(zeros(N), idx + lo, v) for scatter_add(zeros(L), idx, v)."""
        sdg = self.sdg
        z_e, i_e, v_e = (_input(sdg, src.op_id, k) for k in range(3))
        z = sdg.ops[z_e.src.op_id]
        assert isinstance(z, ops.FillOp)
        shape = list(z.shape)
        shape[src.dim] = self.n
        zeros = self.add(ops.FillOp, [], domain=Domain.empty(), value=z.value,
                         shape=type(z.shape).from_(tuple(shape)), dtype=z.dtype)
        it = dtypes.default_int
        idx: tuple[TensorId, IndexSequence] = (i_e.src, i_e.expr)
        if sdg.tensors[i_e.src].dtype != it:
            idx = self.here(self.add(ops.CastOp, [idx], dtype=it))
        if start is not None:
            idx = self.here(self.add(ops.BinaryOp, [idx, self.start(start)], fn="add"))
        return self.add(ops.ScatterAddOp, [(zeros, IndexSequence(())), idx,
                                           (v_e.src, v_e.expr)], dim=src.dim)
