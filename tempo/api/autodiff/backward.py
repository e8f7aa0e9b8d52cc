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

import tempo.prims  # noqa: F401 - registers every primitive's gradient rule
from tempo.api.autodiff.composite_grads import composite_grads
from tempo.api.autodiff.errors import GradientError
from tempo.api.autodiff.grad_rules import grad_rule
from tempo.api.autodiff.reverse import Validity, reverse_edge
from tempo.api.autodiff.support import BranchSupport
from tempo.api.autodiff.tape import Tape, tape_of
from tempo.api.tensor_base import RTBase
from tempo.compiler.passes.lower_fused import lower_before_autodiff
from tempo.core import index_expr as ie
from tempo.core import naming, ops
from tempo.core.domain import Domain
from tempo.core.dtype import dtypes
from tempo.core.errors import IndexExprError, ShapeError, UnsupportedError, user_site
from tempo.core.sdg import SDG, Edge, TensorId

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor as RT

BACKWARD_REGION = "__BACKWARD_REGION__"


def backward(x: RT, grad: Any = None) -> None:
    """`x.backward(grad)`: seed ones (or `grad`) over x's domain and give leaves `.grad`.

    Which leaves get a gradient, and when it is an error that one does not:
    - a leaf (`requires_grad=True`) the loss does not depend on keeps `.grad` None, as in
      PyTorch (an optimizer may hold parameters another loss uses);
    - a placeholder declared with `requires_grad=True` is a leaf: it gets `.grad`, and its
      definition is not differentiated through (API §3.7). If the loss reaches another
      grad-requiring tensor through such a definition (`h[True] = (w * h[t-1]).tanh()`
      with `h` declared `requires_grad=True`), that path would silently give `w` no
      gradient: this raises `GradientError` here, naming `h`, `w` and their lines, before
      anything is recorded. Declare `h` without `requires_grad` to differentiate through it,
      or `.detach()` the reads in its definition to cut the path on purpose.
    """
    ctx = x._ctx_mgr
    if x.requires_grad is None and _reaches_a_leaf(ctx, x):
        # a placeholder read before a later branch made it require grad (p[i+1] = p + h...
        # recorded before h[...] = f(w)): the flags of the ops recorded in between are stale
        x.requires_grad = True
        tape_of(ctx).note_produced(x, x.tensor_id.op_id)  # an op result, not a leaf
    if x.requires_grad is not True and _reads_a_gradient(x):
        raise GradientError(f"backward() of {naming.op_label(x.op, x.sdg.names)}, which is "
                            "computed from a gradient (a .grad tensor): gradients of "
                            "gradients (double backward, e.g. a gradient penalty) are not "
                            "supported: Tempo's autodiff is first-order", site=user_site())
    if x.requires_grad is not True:  # None: no input asked for grad; torch raises too
        raise GradientError(f"backward() of {naming.op_label(x.op, x.sdg.names)}, which does "
                            "not require grad: no tensor it is computed from was made with "
                            "requires_grad=True, so no .grad would be set (create the weights "
                            "with requires_grad=True, or use nn parameters)", site=user_site())
    if grad is None and len(x.shape) != 0:
        raise ShapeError(f"backward() without grad needs a scalar loss, got shape {x.shape}",
                         site=user_site())
    from tempo.api.tempo_context_manager import _stack

    active = contextlib.nullcontext() if _stack() and _stack()[-1] is ctx else ctx
    with active, ctx.tag_region(BACKWARD_REGION):
        tape = tape_of(ctx)
        if x.requires_grad is True:
            tape.note_leaf(x)
        # hand-written softmax / norms / attention become the fused primitives first, so
        # their closed-form gradients apply (tempo.compiler.passes.lower_fused)
        lower_before_autodiff(ctx.sdg, ctx.execution_config, frozenset(tape.stopped),
                              tape.lowered)
        root = x.ident()
        seed = _seed(root, grad)
        bw = _Backward(ctx, root.tensor_id)
        bw.run(seed)
        inner = composite_grads(bw, tape.lowered)  # the lowered composites' intermediates
        tape.release({t: g for t, g in bw.adj.items() if not tape.is_leaf(t)} | inner)
    x._ctx = None


def _reaches_a_leaf(ctx: Any, x: RT) -> bool:
    """Whether x's value reads a grad-requiring leaf through edges that carry gradients.

    A flag is fixed when an op is recorded, but a placeholder's flag can turn True later
    (its branches may be assigned after it was read), so the graph is the truth."""
    bw = _Backward(ctx, x.tensor_id)
    return any(bw.tape.is_leaf(t) for t in bw._upstream(x.tensor_id) if t != x.tensor_id)


def _reads_a_gradient(x: RT) -> bool:
    """Whether x is computed from an op an earlier backward() recorded (its grads carry
    no requires_grad, so without this the error would blame the weights' flags)."""
    sdg, seen, work = x.sdg, {x.tensor_id.op_id}, [x.tensor_id.op_id]
    while work:
        op = sdg.ops[work.pop()]
        if BACKWARD_REGION in op.tags:
            return True
        for e in sdg.in_edges.get(op.op_id, []):
            if e.src.op_id not in seen:
                seen.add(e.src.op_id)
                work.append(e.src.op_id)
    return False


def check_lowering_config(ctx: Any, cfg: Any) -> None:
    """Called by `compile`: the composites `backward()` lowered must be ones `cfg` lowers.

    `backward()` records the gradient when it is called, before any compile config is
    known, so it lowers with the context's config (the gradient of a lowered composite is
    the fused op's closed form; the composite's intermediates are not in it). Compiling
    under a config that disables a rule backward() applied (`use_active_config=True`, or a
    config changed after backward()) would run the fused op the config turns off: that
    raises `UnsupportedError` here rather than silently ignoring the flag. The opposite
    case is what the flag promises: a rule off at backward() but on at compile lowers
    every composite it finds whose intermediates nothing else reads — not those whose
    gradient backward() recorded through their intermediates."""
    from tempo.compiler.passes.lower_fused import enabled_rules

    tape = getattr(ctx, "_autodiff_tape", None)
    if tape is None:
        return
    on = enabled_rules(cfg)
    off = sorted({rec.rule for rec in tape.lowered if rec.rule not in on})
    if off:
        recs = [r for r in tape.lowered if r.rule in off]
        where = "; ".join(f"{naming.op_label(r.final, ctx.sdg.names)}" for r in recs[:3])
        raise UnsupportedError(
            f"backward() lowered {len(recs)} hand-written composite(s) to fused ops with "
            f"{', '.join(off)} ({where}), which the compile config disables: the gradient "
            f"was recorded with the context's config. Set the compile config's "
            f"enable_algebraic_optimizer / algebraic_optims_to_disable on the TempoContext "
            f"before calling backward(), or compile with the context's config",
            site=user_site())


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

    def _upstream(self, start: TensorId) -> set[TensorId]:
        """Tensors the gradient of `start` reaches: live float reads, stopping at leaves."""
        back, work = {start}, [start]
        while work:
            tid = work.pop()
            if self.tape.is_leaf(tid) and tid != start:
                continue
            for e in self._live_in_edges(tid.op_id):
                if e.src not in back:
                    back.add(e.src)
                    work.append(e.src)
        return back

    def _check_leaf_definitions(self, back: set[TensorId]) -> None:
        """GradientError when the loss reaches a grad-requiring leaf through the definition
        of a leaf placeholder (see `backward`): that path would get no gradient, silently."""
        for tid in sorted(back, key=lambda t: (t.op_id, t.output_id)):
            if tid == self.root or not self.tape.is_leaf(tid):
                continue
            if not isinstance(self.sdg.ops[tid.op_id], ops.MergeOp):
                continue
            dropped = {leaf for e in self._live_in_edges(tid.op_id)
                       for leaf in self._upstream(e.src) if self.tape.is_leaf(leaf)} - {tid}
            if not dropped:
                continue
            only = [d for d in dropped if d not in back]
            worst = sorted(only or dropped, key=lambda t: (t.op_id, t.output_id))
            names = " and ".join(naming.tensor_label(self.sdg, d) for d in worst)
            how, lost = ("only", "no gradient") if only else ("partly", "part of its gradient")
            one = len(worst) == 1
            raise GradientError(
                f"{names} {'requires' if one else 'require'} grad, but the loss reaches "
                f"{'it' if one else 'them'} {how} through the "
                f"definition of {naming.tensor_label(self.sdg, tid)}, a placeholder declared "
                f"with requires_grad=True: such a placeholder is a leaf (it gets .grad) and "
                f"its definition is not differentiated (API §3.7), so "
                f"{'it' if one else 'each'} would get {lost} "
                f"from this loss. Declare the placeholder without requires_grad=True to "
                f"differentiate through its definition, or .detach() those reads in it to "
                f"cut the path on purpose", site=user_site())

    def _needed(self) -> set[TensorId]:
        back = self._upstream(self.root)
        self._check_leaf_definitions(back)
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
        self.support = BranchSupport(self.sdg, self.root, need, self.tape.stopped,
                                     self._first_wins, self.valid)
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
        rule = grad_rule(op)
        all_edges = self.sdg.in_edges[op.op_id]
        xs = [self._wrap(e.src, e.expr) for e in all_edges]
        ys = [self._wrap(TensorId(op.op_id, k)) for k in range(op.num_outputs)]
        gs = [self.adj.get(TensorId(op.op_id, k)) for k in range(op.num_outputs)]
        first = self.sdg._next_id
        grads = rule(op, xs, ys, gs)
        used = [(e, g) for e in edges if (g := grads[e.sink_in]) is not None]
        made = self._drop_unused(first, [g for _, g in used])
        fwd = {x.tensor_id for x in xs + ys}
        reads_fwd = any(e.src in fwd for i in made for e in self.sdg.in_edges[i])
        support = self.support.mask(op.op_id)
        mask = support if reads_fwd else None
        for e, g in used:
            if mask is not None:
                g = self._masked(g, mask, op.domain)
            self._reverse(g, e, op.domain, e.cond, support)

    def _drop_unused(self, first: int, used: list[RT]) -> set[int]:
        """Remove what the rule recorded for inputs that need no gradient (`x @ w` with only
        `w` a leaf): besides costing ops, it would read forward values at points the
        forward never computes (the dead-code pass may be off). Returns the ops kept."""
        made = {i for i in range(first, self.sdg._next_id) if i in self.sdg.ops}
        keep: set[int] = set()
        work = [g.tensor_id.op_id for g in used if g.tensor_id.op_id in made]
        while work:
            i = work.pop()
            if i in keep:
                continue
            keep.add(i)
            work += [e.src.op_id for e in self.sdg.in_edges[i] if e.src.op_id in made]
        self.sdg.remove_ops(made - keep)
        return keep

    def _masked(self, g: RT, cond: ie.BooleanIndexValue, dom: Domain) -> RT:
        """`g` where `cond` holds, zeros elsewhere, as a recurrence: the compiler then runs
        the rule's ops (and the forward values they read) only where `cond` holds."""
        with exact_bounds(self.sdg, dom):
            z = exact_placeholder(self.sdg, g.shape, g.dtype, dom)
            z[cond] = g
            z[True] = _zeros_like(g)
        return z

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

    def _reverse(self, g: RT, e: Edge, sink_dom: Domain, cond: ie.BooleanIndexValue | None,
                 support: ie.BooleanIndexValue | None = None) -> None:
        """Turn a gradient over the sink domain into contributions over the source's points.
        `support`: where the sink's adjoint may be nonzero (BranchSupport). A read outside it
        contributes zero, and reversing it anyway can make the gradient program cyclic:
        `x[True] = x.previous + v` runs the add at the origin too, reading x at the last
        point (wrap-around) for a value the merge never takes; its reverse would make x's
        adjoint at the last point wait for the add's adjoint at the origin, computed last."""
        src_dom = self.sdg.ops[e.src.op_id].domain
        info = self.sdg.tensors[e.src]
        if g.is_indexed:
            g = g.ident()
        is_merge = isinstance(self.sdg.ops[e.sink], ops.MergeOp)
        runs_everywhere = is_merge or self.valid.everywhere(e.sink)
        if cond is None and src_dom == sink_dom and e.expr.is_basis() and runs_everywhere and \
                [m.name for m in e.expr if isinstance(m, ie.Symbol)] == \
                [v.name for v in src_dom.variables]:
            self.contribs[e.src].append(g)
            return
        if support is not None:
            cond = support if cond is None else cond & support
        g = _pad_slices(g, e.expr, src_dom)
        valid = None if runs_everywhere else self.valid.of(e.sink)
        try:
            pieces = reverse_edge(src_dom, sink_dom, e.expr, cond, valid, self.sdg.universe)
        except IndexExprError as exc:
            src = naming.tensor_label(self.sdg, e.src)
            raise IndexExprError(f"cannot differentiate the read of {src} at "
                                 f"[{naming.index_word(e.expr)}]: "
                                 f"{exc.args[0]}",
                                 site=e.site or self.sdg.ops[e.sink].site) from None
        for piece in pieces:
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
