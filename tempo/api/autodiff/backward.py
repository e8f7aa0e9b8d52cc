"""Reverse mode over the SDG: every tensor between the grad-requiring leaves and the loss gets
an adjoint placeholder, defined once as the sum of the reversed contributions of its readers.

Adjoints are placeholders so that recurrences (cycles through merges) need no topological
order: backprop through time is the same rule as any other read, reversed exactly by isl.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tempo.api.autodiff.grad_rules import GRAD_RULES
from tempo.api.autodiff.reverse import Validity, reverse_edge
from tempo.api.autodiff.tape import Tape, tape_of
from tempo.api.tensor_base import RTBase
from tempo.core import index_expr as ie
from tempo.core import ops
from tempo.core.domain import Domain
from tempo.core.dtype import dtypes
from tempo.core.errors import ShapeError, TempoError, user_site
from tempo.core.sdg import SDG, Edge, TensorId

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor as RT

BACKWARD_REGION = "__BACKWARD_REGION__"


def backward(x: RT, grad: Any = None) -> None:
    """`x.backward(grad)`: seed ones (or `grad`) over x's domain and give leaves `.grad`."""
    ctx = x._ctx_mgr
    if x.requires_grad is False:
        raise TempoError(f"backward() of {x.tensor_id!r}, which does not require grad",
                         site=user_site())
    if grad is None and len(x.shape) != 0:
        raise ShapeError(f"backward() without grad needs a scalar loss, got shape {x.shape}",
                         site=user_site())
    from tempo.api.tempo_context_manager import _stack

    active = contextlib.nullcontext() if _stack() and _stack()[-1] is ctx else ctx
    with active, ctx.tag_region(BACKWARD_REGION):
        tape = tape_of(ctx)
        if x.requires_grad is True:
            tape.note_leaf(x)
        root = x.ident()
        seed = _seed(root, grad)
        bw = _Backward(ctx, root.tensor_id)
        bw.run(seed)
        tape.release({t: g for t, g in bw.adj.items() if not tape.is_leaf(t)})
    x._ctx = None


def _seed(root: RT, grad: Any) -> RT:
    from tempo.api.ops.creation import ones
    from tempo.api.tensor_base import lift

    if grad is None:
        return ones(tuple(root.shape), root.dtype)
    g = lift(grad)
    return g.cast(root.dtype) if g.dtype != root.dtype else g


def _is_float(sdg: SDG, tid: TensorId) -> bool:
    return dtypes.is_float(sdg.tensors[tid].dtype)


class _Backward:
    """One backward pass: find the tensors on a leaf→loss path, build and define adjoints."""

    def __init__(self, ctx: Any, root: TensorId) -> None:
        self.ctx, self.sdg, self.root = ctx, ctx.sdg, root
        self.tape: Tape = tape_of(ctx)
        self.adj: dict[TensorId, RT] = {}
        self.contribs: dict[TensorId, list[RT]] = {}
        self.valid = Validity(self.sdg, self._first_wins)
        self.need: set[TensorId] = set()

    # ---------------------------------------------------------------- the path
    def _live_in_edges(self, op_id: int) -> list[Edge]:
        return [e for e in self.sdg.in_edges[op_id]
                if (op_id, e.sink_in) not in self.tape.stopped and _is_float(self.sdg, e.src)]

    def _needed(self) -> set[TensorId]:
        back, work = {self.root}, [self.root]
        while work:
            tid = work.pop()
            if self.tape.is_leaf(tid) and tid != self.root:
                continue
            for e in self._live_in_edges(tid.op_id):
                if e.src not in back:
                    back.add(e.src)
                    work.append(e.src)
        leaves = [t for t in back if self.tape.is_leaf(t)]
        fwd, work = set(leaves), list(leaves)
        while work:
            tid = work.pop()
            for e in self.sdg.out_edges.get(tid.op_id, []):
                if e.src != tid or (e.sink, e.sink_in) in self.tape.stopped:
                    continue
                for k in range(self.sdg.ops[e.sink].num_outputs):
                    out = TensorId(e.sink, k)
                    if out in back and out not in fwd and not self.tape.is_leaf(out):
                        fwd.add(out)
                        work.append(out)
        return back & fwd

    # ---------------------------------------------------------------- adjoints
    def run(self, seed: RT) -> None:
        need = self.need = self._needed()
        if self.root not in need:
            return
        for tid in sorted(need, key=lambda t: (t.op_id, t.output_id)):
            self.adj[tid] = self._placeholder(tid)
            self.contribs[tid] = []
        self.contribs[self.root].append(seed)
        for op_id in sorted({t.op_id for t in need}):
            n_out = self.sdg.ops[op_id].num_outputs
            if any(self.tape.is_leaf(TensorId(op_id, k)) for k in range(n_out)):
                continue
            self._op(self.sdg.ops[op_id], need)
        for tid in sorted(need, key=lambda t: (t.op_id, t.output_id)):
            self._define(tid)
        for tid in need:
            if self.tape.is_leaf(tid):
                old = self.tape.grads.get(tid)
                new = self.adj[tid]
                self.tape.grads[tid] = new if old is None else _accumulate(old, new)

    def _placeholder(self, tid: TensorId) -> RT:
        info, dom = self.sdg.tensors[tid], self.sdg.ops[tid.op_id].domain
        return exact_placeholder(self.sdg, info.shape, info.dtype, dom)

    def _wrap(self, tid: TensorId, expr: ie.IndexSequence | None = None) -> RT:
        op = self.sdg.ops[tid.op_id]
        basis = expr is None or (expr.is_basis() and [getattr(m, "name", None) for m in expr]
                                 == [v.name for v in op.domain.variables])
        return RTBase._final_cls(tid, None if basis else expr, False, self.ctx)

    def _op(self, op: ops.Op, need: set[TensorId]) -> None:
        edges = [e for e in self._live_in_edges(op.op_id) if e.src in need]
        if not edges:
            return
        if isinstance(op, ops.MergeOp):
            self._merge(op, edges)
            return
        rule = GRAD_RULES.get(op.name)
        if rule is None:
            raise TempoError(f"no gradient rule for {op!r}", site=op.site)
        all_edges = self.sdg.in_edges[op.op_id]
        xs = [self._wrap(e.src, e.expr) for e in all_edges]
        ys = [self._wrap(TensorId(op.op_id, k)) for k in range(op.num_outputs)]
        gs = [self.adj.get(TensorId(op.op_id, k)) for k in range(op.num_outputs)]
        grads = rule(op, xs, ys, gs)
        for e in edges:
            g = grads[e.sink_in]
            if g is not None:
                self._reverse(g, e, op.domain, e.cond)

    def _first_wins(self, op: ops.Op) -> dict[int, ie.BooleanIndexValue]:
        """The condition under which each branch of a merge is the one taken."""
        taken: ie.BooleanIndexValue = ie.ConstBool(False)
        first_wins: dict[int, ie.BooleanIndexValue] = {}
        for e in self.sdg.in_edges[op.op_id]:
            c = e.cond if e.cond is not None else ie.ConstBool(True)
            first_wins[e.sink_in] = c & ~taken
            taken = taken | c
        return first_wins

    def _merge(self, op: ops.MergeOp, edges: list[Edge]) -> None:
        """Branch i receives the merge's adjoint where it is the first true branch."""
        first_wins = self._first_wins(op)
        g = self.adj[TensorId(op.op_id, 0)]
        for e in edges:
            cond = first_wins[e.sink_in]
            self._reverse(g, e, op.domain, None if _is_true(cond) else cond)

    def _reverse(self, g: RT, e: Edge, sink_dom: Domain, cond: ie.BooleanIndexValue | None) -> None:
        """Turn a gradient over the sink domain into contributions over the source's points."""
        src_dom = self.sdg.ops[e.src.op_id].domain
        info = self.sdg.tensors[e.src]
        if g.is_indexed:
            g = g.ident()
        is_merge = isinstance(self.sdg.ops[e.sink], ops.MergeOp)
        runs_everywhere = is_merge or self.valid.everywhere(e.sink)
        if cond is None and src_dom == sink_dom and e.expr.is_basis() and runs_everywhere and \
                [m.name for m in e.expr] == [v.name for v in src_dom.variables]:  # type: ignore[attr-defined]
            self.contribs[e.src].append(g)
            return
        g = _pad_slices(g, e.expr, src_dom)
        valid = None if runs_everywhere else self.valid.of(e.sink)
        for piece in reverse_edge(src_dom, sink_dom, e.expr, cond, valid, self.sdg.universe):
            with exact_bounds(self.sdg, src_dom):
                r = g[tuple(piece.members)] if piece.members else g
                k = sum(1 for m in piece.members if isinstance(m, ie.Slice))
                slice_vars = [v for v, m in zip(src_dom.variables, e.expr)
                              if isinstance(m, ie.Slice)]
                for j in reversed(range(len(slice_vars))):
                    r = r.index(k + j, slice_vars[j])
                if k:
                    r = r.sum(tuple(range(k)))
                if r.shape != info.shape:
                    raise ShapeError(f"gradient of {e.src!r} has shape {r.shape}, not {info.shape}")
                if piece.cond is not None or not _same_bounds(src_dom):
                    z = exact_placeholder(self.sdg, info.shape, r.dtype, src_dom)
                    if piece.cond is not None:
                        z[piece.cond] = r
                    else:
                        z[True] = r
                    z[True] = _zeros_like(r)
                    r = z
            self.contribs[e.src].append(r)

    def _define(self, tid: TensorId) -> None:
        info, dom = self.sdg.tensors[tid], self.sdg.ops[tid.op_id].domain
        parts = self.contribs[tid]
        with exact_bounds(self.sdg, dom):
            if not parts:
                total = _zeros_like(self.adj[tid])
            else:
                total = parts[0]
                for p in parts[1:]:
                    total = total + p
            if total.dtype != info.dtype:
                total = total.cast(info.dtype)
            if total.shape != info.shape:
                total = total.expand(tuple(info.shape))
        self.adj[tid][True] = total


def _is_true(c: ie.BooleanIndexValue) -> bool:
    return isinstance(c, ie.ConstBool) and bool(c.const)


def _same_bounds(dom: Domain) -> bool:
    return dom == Domain(dom.variables)


def _zeros_like(x: RT) -> RT:
    from tempo.api.ops.creation import zeros

    return zeros(tuple(x.shape), x.dtype)


def _accumulate(old: RTBase, new: RT) -> RT:
    return new + old


def _pad_slices(g: RT, expr: ie.IndexSequence, src_dom: Domain) -> RT:
    """Each slice-introduced dim of `g` widened to the source's full bound, the slice's
    elements at their source positions: every reader then has the same static layout."""
    from tempo.api.autodiff.grad_rules import pad_back

    d = 0
    for v, m in zip(src_dom.variables, expr):
        if not isinstance(m, ie.Slice):
            continue
        ub = src_dom.bound_of(v)
        if not (ie.struct_eq(m.start, ie.ConstInt(0)) and ie.struct_eq(m.stop, ub)):
            g = pad_back(g, d, m.start.simplify(), ub, g.shape[d])
        d += 1
    return g


def exact_placeholder(sdg: SDG, shape: Any, dtype: Any, dom: Domain) -> RT:
    """A placeholder over `dom` including its bound overrides (e.g. `t < T+1`)."""
    from tempo.api.ops.creation import placeholder

    p = placeholder(shape, dtype, Domain(dom.variables), requires_grad=False)
    if not _same_bounds(dom):
        sdg.replace_op(replace(p.op, domain=dom))
    return p


@contextlib.contextmanager
def exact_bounds(sdg: SDG, dom: Domain) -> Iterator[None]:
    """Ops recorded inside over variables of `dom` take `dom`'s bound overrides, so that a
    gradient of a shifted recurrence (`t < T+1`) is computed at all of its points."""
    first = sdg._next_id
    yield
    if _same_bounds(dom):
        return
    for op_id in range(first, sdg._next_id):
        op = sdg.ops.get(op_id)
        if op is None or not op.domain.variables:
            continue
        if not all(dom.has_dim(v) for v in op.domain.variables):
            continue
        want = Domain(op.domain.variables, {v: dom.bound_of(v) for v in op.domain.variables})
        if want != op.domain:
            sdg.replace_op(replace(op, domain=want))
