"""The rewrite of the vectorisation pass: each planned op `x` over `d` gets a batched twin
`x'` without `d` in its domain and with a leading spatial dim `D`; `x` itself becomes an
"unbatch" op (its value at point `d` is `x'[d]`), so readers outside the group, the
user's kept tensors and every read expression and condition stay exactly as they were.

Reads are rewritten exactly:
- `x'` reads a batched producer `s'` where `x` read `s[d]` (the `d` member dropped);
- a producer that keeps its loop over `d` is gathered whole (`s[0:D]`, one stacked read);
- a producer without `d` is read as before and broadcast by the op's batching rule;
- the read delivers slice dims first: when other slices come before `D`, a permute
  moves `D` to the front;
- an outside reader of a full slice `x[0:D]` (a reduction over the dimension, the last
  slice of its read) reads `x'` directly, with no unbatching;
- a recurrence selecting along `d` becomes the concatenation of its pieces.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from tempo.compiler.passes.vectorize_pieces import Piece, Pieces
from tempo.compiler.passes.vectorize_plan import Plan
from tempo.core import ops
from tempo.core.domain import Domain
from tempo.core.dtype import dtypes
from tempo.core.index_expr import ConstInt, IndexSequence, Slice, Symbol
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import Shape


class _Rewriter:
    def __init__(self, sdg: SDG, plan: Plan, drop_unread: bool) -> None:
        self.sdg = sdg
        self.drop_unread = drop_unread
        self.plan = plan
        self.d = plan.dim
        self.D = plan.size
        self.twin: dict[int, int] = {}
        self.unbatch: list[int] = []
        self._index: int | None = None
        self._adapters: dict[tuple, TensorId] = {}  # (kind, read, domain, params) -> made

    # ------------------------------------------------------------ helpers
    def _new(self, op_cls: type[ops.Op], domain: Domain,
             reads: list[tuple[TensorId, IndexSequence]], **params: Any) -> TensorId:
        """A new op over `domain` reading `reads` (shape from its rule)."""
        op = op_cls(op_id=self.sdg.new_id(), domain=domain, **params)
        self.sdg.add_inferred(op, reads)
        return TensorId(op.op_id, 0)

    def _adapt(self, e: Edge, domain: Domain, op_cls: type[ops.Op], **params: Any) -> Edge:
        """Route read `e` through a new op over `domain`: the reader then reads it at
        its own point. The new op keeps only the dims the read uses: an adapter of a
        value that does not vary along a dim (a constant, a boundary value) runs once,
        not at every point of the reader's other dims."""
        used = {v.name for v in e.expr.vars_used()}
        if e.cond is not None:
            used |= {v.name for v in e.cond.vars_used()}
        domain = domain.intersect([v for v in domain.variables if v.name in used])
        key = self._adapter_key(e, domain, op_cls, params)
        made = None if key is None else self._adapters.get(key)
        if made is None:
            op = op_cls(op_id=self.sdg.new_id(), domain=domain, **params)
            probe = Edge(op.op_id, 0, e.src, e.expr, e.cond, e.site)
            shapes, dts = op.infer([self.sdg.read_shape(probe)],
                                   [self.sdg.tensors[e.src].dtype])
            self.sdg.add_op(op, [], shapes, dts)
            self.sdg.add_edge(probe)
            made = TensorId(op.op_id, 0)
            if key is not None:
                self._adapters[key] = made
        return Edge(e.sink, e.sink_in, made, domain.basis_expr, None, e.site)

    @staticmethod
    def _adapter_key(e: Edge, domain: Domain, op_cls: type[ops.Op],
                     params: dict[str, Any]) -> tuple | None:
        """What makes two adapters equal: one per read, so a reader reading one value
        twice (the gradient of tanh records `y * y`) gets one permute of it, not two equal
        ones the clean-up's dedup, which ran before this pass, never sees. None (no
        sharing) for a conditional read or unhashable parameters."""
        if e.cond is not None:
            return None
        key = (op_cls, e.src, e.expr, tuple(v.name for v in domain.variables),
               tuple(sorted(params.items())))
        try:
            hash(key)
        except TypeError:
            return None
        return key

    def _index_op(self) -> int:
        """The op holding the current value of `d` (the index of unbatching reads)."""
        if self._index is None:
            tid = self._new(ops.EvalSymbolOp, Domain.from_vars([self.d]), [], symbol=self.d,
                            dtype=dtypes.default_int)
            self._index = tid.op_id
        return self._index

    # ------------------------------------------------------------ the rewrite
    def run(self) -> None:
        sdg, d = self.sdg, self.d
        members = sorted(self.plan.members)
        for i in members:
            op = sdg.ops[i]
            b = self.plan.batchings[i]
            if i in self.plan.pieces:
                twin: ops.Op = (ops.CatOp(op_id=sdg.new_id(), domain=op.domain.remove_dim(d),
                                          dim=0, site=op.site)
                                if len(self.plan.pieces[i]) > 1 else
                                ops.IdentOp(op_id=sdg.new_id(), domain=op.domain.remove_dim(d),
                                            site=op.site))
            else:
                twin = replace(b.op, op_id=sdg.new_id(), domain=op.domain.remove_dim(d))
            n = op.num_outputs
            infos = [sdg.tensors[TensorId(i, k)] for k in range(n)]
            sdg.add_op(twin, [], [x.shape.prepend_dim(self.D) for x in infos],
                       [x.dtype for x in infos])
            self.twin[i] = twin.op_id
        for i in members:
            if i in self.plan.pieces:
                edges = [self._piece(i, p) for p in self.plan.pieces[i]]
            else:
                edges = [self._in(i, k, e) for k, e in enumerate(sdg.in_edges[i])]
                if i in self.plan.masks:
                    for k in self.plan.batchings[i].addresses:
                        edges[k] = self._mask(edges[k], self.plan.masks[i])
            sdg.set_in_edges(self.twin[i], edges)
        for i in members:
            self._outside_readers(i)
        if self.drop_unread:
            self._drop_unread()

    def _in(self, i: int, k: int, e: Edge) -> Edge:
        """Input `k` of the twin of `i`, from `i`'s read `e`."""
        sdg, d = self.sdg, self.d
        twin = sdg.ops[self.twin[i]]
        src = sdg.ops[e.src.op_id]
        b = self.plan.batchings[i]
        read = self.plan.reads[i][k]
        if read.kind == "free" or (read.kind == "at" and e.src.op_id not in self.twin):
            new = Edge(twin.op_id, k, e.src, e.expr, e.cond, e.site)
            if b.expand:  # every branch of a batched recurrence carries D
                shape = sdg.tensors[e.src].shape.prepend_dim(self.D)
                tid = self._new(ops.ExpandOp, src.domain, [(e.src, src.domain.basis_expr)],
                                shape=shape)
                return Edge(twin.op_id, k, tid, e.expr, e.cond, e.site)
            return self._reshaped(new, b.reshapes[k], twin.domain)
        pos = src.domain.find_variable_index(d)
        if e.src.op_id in self.twin:
            expr = e.expr.skip_idx(pos)
            new = Edge(twin.op_id, k, TensorId(self.twin[e.src.op_id], e.src.output_id), expr,
                       e.cond, e.site)
            before = expr.num_slices()
            if read.kind == "at":  # one point for every d: unbatched
                return self._reshaped(self._select(new, twin.domain, np.asarray(read.c)),
                                      b.reshapes[k], twin.domain)
            if read.kind == "shift":
                where = np.clip(np.arange(self.D) + read.c, 0, self.D - 1)
                new = self._select(new, twin.domain, where)
            elif read.kind == "table":
                new = self._select(new, twin.domain, np.asarray(read.where))
        elif read.kind == "shift":  # gather the points the loop reads, edge-padded
            lo, hi = max(0, read.c), self.D + min(0, read.c)
            expr = e.expr.replace_idx(pos, Slice(ConstInt(lo), ConstInt(hi)))
            new = self._select(Edge(twin.op_id, k, e.src, expr, e.cond, e.site), twin.domain,
                               np.clip(np.arange(self.D) + read.c - lo, 0, hi - lo - 1))
            before = 0
        elif read.kind == "table":  # gather the span of points read, then pick each
            lo, hi = min(read.where), max(read.where) + 1
            expr = e.expr.replace_idx(pos, Slice(ConstInt(lo), ConstInt(hi)))
            new = self._select(Edge(twin.op_id, k, e.src, expr, e.cond, e.site), twin.domain,
                               np.asarray(read.where) - lo)
            before = 0
        else:  # a producer that keeps its loop: gather all D points
            expr = e.expr.replace_idx(pos, Slice(ConstInt(0), ConstInt(self.D)))
            new = Edge(twin.op_id, k, e.src, expr, e.cond, e.site)
            before = sum(isinstance(m, Slice) for m in list(expr)[:pos])
        if before:
            if isinstance(twin, ops.MergeOp):  # routing a branch through an op would
                raise AssertionError("planned merge read with slices")  # lose its condition
            rank = len(sdg.read_shape(new))
            perm = (before, *range(before), *range(before + 1, rank))
            new = self._adapt(new, twin.domain, ops.PermuteOp, dims=perm)
        return self._reshaped(new, b.reshapes[k], twin.domain)

    def _select(self, e: Edge, domain: Domain, where: np.ndarray) -> Edge:
        """Route read `e` through `index_select(0, where)` (a constant index: a shifted
        read of a batched tensor with its ends clamped, or one point of it)."""
        idx = self._new(ops.ConstOp, Domain.empty(), [],
                        value=where.astype(dtypes.to_np(dtypes.default_int)),
                        dtype=dtypes.default_int)
        op = ops.IndexSelectOp(op_id=self.sdg.new_id(), domain=domain, dim=0)
        probe = Edge(op.op_id, 0, e.src, e.expr, e.cond, e.site)
        shapes, dts = op.infer([self.sdg.read_shape(probe), Shape.from_(where.shape)],
                               [self.sdg.tensors[e.src].dtype, dtypes.default_int])
        self.sdg.add_op(op, [], shapes, dts)
        self.sdg.add_edge(probe)
        self.sdg.add_edge(Edge(op.op_id, 1, idx, IndexSequence(()), None, e.site))
        return Edge(e.sink, e.sink_in, TensorId(op.op_id, 0), domain.basis_expr, None, e.site)

    def _mask(self, e: Edge, at: np.ndarray) -> Edge:
        """Route the batched index read `e` through `where(at, index, 0)`: at the points
        the loop would not run its reader (`at` false) the index is 0, in range."""
        shape = self.sdg.read_shape(e)
        dt = self.sdg.tensors[e.src].dtype
        assert e.cond is None and len(shape) >= 1, "a masked index is a plain batched read"
        domain = self.sdg.ops[e.sink].domain
        mask = self._new(ops.ConstOp, Domain.empty(), [], dtype=dtypes.bool_,
                         value=at.reshape((self.D,) + (1,) * (len(shape) - 1)))
        zero = self._new(ops.ConstOp, Domain.empty(), [], dtype=dt,
                         value=np.zeros((), dtype=dtypes.to_np(dt)))
        tid = self._new(ops.WhereOp, domain, [(mask, IndexSequence(())), (e.src, e.expr),
                                              (zero, IndexSequence(()))])
        return Edge(e.sink, e.sink_in, tid, domain.basis_expr, None, e.site)

    def _reshaped(self, e: Edge, shape: Shape | None, domain: Domain) -> Edge:
        return e if shape is None else self._adapt(e, domain, ops.ReshapeOp, shape=shape)

    def _piece(self, i: int, p: Piece) -> Edge:
        """One run of a batched recurrence: `p.hi - p.lo` points as one tensor."""
        sdg, d = self.sdg, self.d
        twin = sdg.ops[self.twin[i]]
        e, n = p.edge, p.hi - p.lo
        src = sdg.ops[e.src.op_id]
        shape = sdg.tensors[e.src].shape
        if p.start is None:  # a source without d: its value repeats along the run
            base = Edge(twin.op_id, 0, e.src, e.expr, None, e.site)
            return self._adapt(base, twin.domain, ops.ExpandOp, shape=shape.prepend_dim(n))
        pos = src.domain.find_variable_index(d)
        length = n if p.shift else 1
        if e.src.op_id in self.twin:
            base = Edge(twin.op_id, 0, TensorId(self.twin[e.src.op_id], e.src.output_id),
                        e.expr.skip_idx(pos), None, e.site)
            base = self._adapt(base, twin.domain, ops.SliceOp, dim=0, start=p.start,
                               length=length)
        else:
            span = Slice(ConstInt(p.start), ConstInt(p.start + length))
            base = Edge(twin.op_id, 0, e.src, e.expr.replace_idx(pos, span), None, e.site)
        if not p.shift and n > 1:
            base = self._adapt(base, twin.domain, ops.ExpandOp, shape=shape.prepend_dim(n))
        return base

    def _outside_readers(self, i: int) -> None:
        """Readers of `i` outside the group: a full slice over `d` reads the twin, the
        rest read `i` turned into the unbatching of the twin at `d`."""
        sdg, d = self.sdg, self.d
        op = sdg.ops[i]
        pos = op.domain.find_variable_index(d)
        for e in list(sdg.out_edges.get(i, [])):
            if e.sink in self.twin:
                continue  # the group's readers read twins; `i`'s old readers are redefined
            m = e.expr[pos]
            full = (isinstance(m, Slice) and m.start.try_eval(sdg.bound_defs) == 0
                    and m.stop.try_eval(sdg.bound_defs) == self.D)
            if not full:
                continue
            after = sum(isinstance(x, Slice) for x in list(e.expr)[pos + 1:])
            reader = sdg.ops[e.sink]
            if after and (e.cond is not None or isinstance(reader, ops.MergeOp)):
                continue  # an op in between would lose the read's condition: unbatch
            new = sdg.set_input(e, TensorId(self.twin[i], e.src.output_id),
                                e.expr.skip_idx(pos))
            if after:  # the read stacks the later slices first: move D back in place
                j = new.expr.num_slices()
                rank = len(sdg.read_shape(new))
                order = [*range(rank)]
                order.insert(j - after, order.pop(j))
                routed = self._adapt(new, reader.domain, ops.PermuteOp, dims=tuple(order))
                sdg.set_input(new, routed.src, routed.expr)
        idx = self._index_op()
        twin_dom = sdg.ops[self.twin[i]].domain
        if op.num_outputs == 1:
            sdg.redefine(ops.IndexSelectOp(op_id=i, domain=op.domain, dim=0, site=op.site),
                         [(TensorId(self.twin[i], 0), twin_dom.basis_expr),
                          (TensorId(idx, 0), IndexSequence((d,)))])
            self.unbatch.append(i)
            return
        for k in range(op.num_outputs):
            tid = TensorId(i, k)
            readers = [e for e in sdg.readers(tid) if e.sink not in self.twin]
            if not readers:
                continue
            u = self._new(ops.IndexSelectOp, op.domain,
                          [(TensorId(self.twin[i], k), twin_dom.basis_expr),
                           (TensorId(idx, 0), IndexSequence((d,)))], dim=0)
            self.unbatch.append(u.op_id)
            for e in readers:
                sdg.set_input(e, u, e.expr)
        sdg.set_in_edges(i, [])
        sdg.remove_op(i)

    def _drop_unread(self) -> None:
        """Unbatching ops nobody reads (and the user does not keep) are removed (with
        dead-code elimination on: without it every tensor stays readable, API §4.1)."""
        sdg = self.sdg
        for i in self.unbatch:
            if i in sdg.ops and not sdg.out_edges.get(i) and not sdg.is_kept(i):
                sdg.remove_op(i)
        if self._index is not None and not sdg.out_edges.get(self._index):
            sdg.remove_op(self._index)


def vectorize(sdg: SDG, plan: Plan, drop_unread: bool) -> set[int]:
    """Apply `plan` to `sdg` in place; `drop_unread`: remove unbatching ops nothing reads.
    Returns the ids of the batched ops."""
    if not plan.batchings:
        return set()
    rw = _Rewriter(sdg, plan, drop_unread)
    rw.run()
    return set(rw.twin.values())


__all__ = ["vectorize", "Pieces", "Symbol"]
