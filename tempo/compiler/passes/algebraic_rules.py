"""The algebraic rule table: each entry is a name, the op kinds it matches, and a rewrite
that checks its pattern on one op and, if it holds, rewrites with the SDG helpers
(returning whether it did). Every rule is exact, bit for bit, on every backend:

- aliases: an op equal to one of its inputs (`ident`, a cast to the same dtype, a reshape,
  permute or expand to the same shape, `x+(-0.0)`, `x-0`, `x*1`, `x/1`, `x**1`, `--x`,
  `b & True`, `b | False`, a sum over no dims, a merge with one unconditional branch)
  hands its readers its input (reads composed exactly);
- chains: a lossless cast followed by a cast, a reshape of a reshape, a permute of a
  permute, an expand of an expand, read the first op's input directly; an element picked
  along a dim an expand added is the expand's input; size-1 dims a reshape drops before
  an elementwise op and the next reshape adds back are never dropped;
- merge branches whose condition is false for the compile-time bounds are dropped, and a
  `where` whose condition is constant is the branch it picks.

`x+0.0` is not `x` for `x = -0.0`, and `x*0` is not 0 for inf or NaN: such rules are absent.
Rules over several ops at once (sum of cat, recurrences into cumsum) live in their own
modules and are registered at the end of the table; last come the lowerings of
hand-written softmax, norms and attention to the fused primitives (`lower_fused`), the
only rules that are not bit for bit: the fused kernels round differently."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from tempo.compiler.passes import lower_fused
from tempo.compiler.passes.constant_folding import read_value
from tempo.compiler.passes.merge_fixed_reads import merge_fixed_reads
from tempo.compiler.passes.recurrence_lifting import lift_cumsum
from tempo.compiler.passes.sum_of_cat import sum_of_cat
from tempo.core import ops
from tempo.core.dtype import DataType, dtypes, is_float_np
from tempo.core.index_expr import ConstBool, IndexSequence
from tempo.core.sdg import SDG, Edge, RewriteError, TensorId
from tempo.core.sdg_compose import compose
from tempo.core.shape import Shape


@dataclass(frozen=True)
class Rule:
    """One rewrite: `rewrite(sdg, op)` on ops of `kinds`; True when it changed the graph."""

    name: str
    kinds: tuple[type[ops.Op], ...]
    rewrite: Callable[[SDG, Any], bool]


# ---------------------------------------------------------------- helpers
def same_shape(a: Shape, b: Shape) -> bool:
    if a.is_static() and b.is_static():
        return tuple(a) == tuple(b)
    return str(a) == str(b)


def alias(sdg: SDG, op: ops.Op, src: TensorId, via: IndexSequence,
          accept: Callable[[Edge], bool] | None = None) -> bool:
    """Readers of `op`'s output read `src` at `via` (over op's domain) instead, when that
    read has exactly op's shape and dtype. True when some read moved."""
    out = TensorId(op.op_id, 0)
    info = sdg.tensors[out]
    probe = Edge(op.op_id, 0, src, via)
    if sdg.tensors[src].dtype != info.dtype or not same_shape(sdg.read_shape(probe), info.shape):
        return False
    try:
        return sdg.replace_all_uses(out, src, via=via, where=accept) > 0
    except RewriteError:
        return False


def alias_input(sdg: SDG, op: ops.Op, k: int = 0) -> bool:
    """`alias` to what input `k` reads (unconditional reads only)."""
    e = sdg.in_edges[op.op_id][k]
    return e.cond is None and alias(sdg, op, e.src, e.expr)


def through(sdg: SDG, e: Edge) -> Edge | None:
    """The only input of the op `e` reads, as a read at `e`'s reader (composed), or None."""
    inner = sdg.in_edges[e.src.op_id]
    if e.cond is not None or len(inner) != 1 or inner[0].cond is not None:
        return None
    expr = compose(inner[0].expr, sdg.ops[e.src.op_id].domain.variables, e.expr)
    return None if expr is None else Edge(e.sink, e.sink_in, inner[0].src, expr)


def read_through(sdg: SDG, op: ops.Op, kind: type[ops.Op],
                 ok: Callable[[Any], bool] = lambda inner: True) -> bool:
    """If `op` reads (by points) an op of `kind` that `ok` accepts, read that op's input
    directly instead (the chain rules)."""
    e = sdg.in_edges[op.op_id][0]
    inner = sdg.ops[e.src.op_id]
    if not isinstance(inner, kind) or not e.is_point() or not ok(inner):
        return False
    new = through(sdg, e)
    if new is None or not new.is_point():
        return False
    sdg.set_input(e, new.src, new.expr)
    return True


# ---------------------------------------------------------------- merges
def _alias_merge(sdg: SDG, op: ops.MergeOp) -> bool:
    """A merge with one unconditional branch is that branch (autodiff's adjoints)."""
    if not op.domain.has_default_bounds():
        return False
    es = sdg.in_edges[op.op_id]
    if len(es) != 1 or es[0].src.op_id == op.op_id:
        return False
    cond = es[0].cond
    if cond is not None and not (isinstance(cond, ConstBool) and cond.const):
        return False
    if _closes_merge_free_cycle(sdg, es[0].src.op_id, op.op_id):
        return False
    return alias(sdg, op, es[0].src, es[0].expr)


def _closes_merge_free_cycle(sdg: SDG, src: int, merge: int) -> bool:
    """Whether `src` reads `merge` through ops none of which is a merge: aliasing the merge
    to `src` would leave a cycle without a merge (`u[True] = v + 1; v[True] = u * 2`),
    which no order runs and the scheduler cannot name; kept, the scheduler reports it."""
    seen, todo = {src}, [src]
    while todo:
        for e in sdg.in_edges.get(todo.pop(), ()):
            j = e.src.op_id
            if j == merge:
                return True
            if j not in seen and not isinstance(sdg.ops[j], ops.MergeOp):
                seen.add(j)
                todo.append(j)
    return False


def _prune_branches(sdg: SDG, op: ops.MergeOp) -> bool:
    """Branches false for the compile-time bounds go; a branch true for them ends the list."""
    es = sdg.in_edges[op.op_id]
    kept: list[Edge] = []
    for e in es:
        cond = e.cond
        if cond is not None:
            c = cond.partial_eval(sdg.bound_defs)
            if isinstance(c, ConstBool):
                if not c.const:
                    continue
                cond = None
        kept.append(replace(e, cond=cond))
        if cond is None:
            break
    if len(kept) == len(es) and all(a.cond is b.cond for a, b in zip(kept, es)):
        return False
    sdg.set_in_edges(op.op_id, kept)
    return True


# ---------------------------------------------------------------- movement and casts
def _ident(sdg: SDG, op: ops.IdentOp) -> bool:
    """Identities go; a materialised slice stays for merges (their branches read points)."""
    e = sdg.in_edges[op.op_id][0]
    if e.cond is not None:
        return False
    points_only = None if e.is_point() else (
        lambda r: not isinstance(sdg.ops[r.sink], ops.MergeOp))
    return alias(sdg, op, e.src, e.expr, points_only)


_MANTISSA_BITS = {2: 11, 4: 24, 8: 53}


def lossless(src: DataType, dst: DataType) -> bool:
    """Whether every value of `src` is exactly a value of `dst`."""
    if src == dst or dtypes.is_bool(src):
        return True
    if dtypes.is_float(src):
        return dtypes.is_float(dst) and dst.repr_bytes >= src.repr_bytes
    if dtypes.is_bool(dst):
        return False
    bits = src.repr_bytes * 8 - (1 if dtypes.is_signed_int(src) else 0)
    if dtypes.is_float(dst):
        return bits <= _MANTISSA_BITS[dst.repr_bytes]
    if dtypes.is_signed_int(src):
        return dtypes.is_signed_int(dst) and dst.repr_bytes >= src.repr_bytes
    return dst.repr_bytes > src.repr_bytes or (
        dtypes.is_unsigned_int(dst) and dst.repr_bytes == src.repr_bytes)


def _cast_chain(sdg: SDG, op: ops.CastOp) -> bool:
    def widening(inner: ops.CastOp) -> bool:
        x = sdg.in_edges[inner.op_id][0].src
        return lossless(sdg.tensors[x].dtype, inner.dtype)

    return read_through(sdg, op, ops.CastOp, widening)


def _permute_chain(sdg: SDG, op: ops.PermuteOp) -> bool:
    inner = sdg.ops[sdg.in_edges[op.op_id][0].src.op_id]
    if not isinstance(inner, ops.PermuteOp) or not read_through(sdg, op, ops.PermuteOp):
        return False
    sdg.replace_op(replace(op, dims=tuple(inner.dims[d] for d in op.dims)))
    return True


def _expand_chain(sdg: SDG, op: ops.ExpandOp) -> bool:
    return read_through(sdg, op, ops.ExpandOp)


def _reshape_chain(sdg: SDG, op: ops.ReshapeOp) -> bool:
    return read_through(sdg, op, ops.ReshapeOp)


def _double_neg(sdg: SDG, op: ops.UnaryOp) -> bool:
    if op.fn != "neg":
        return False
    e = sdg.in_edges[op.op_id][0]
    inner = sdg.ops[e.src.op_id]
    if not (isinstance(inner, ops.UnaryOp) and inner.fn == "neg"):
        return False
    new = through(sdg, e)
    return new is not None and alias(sdg, op, new.src, new.expr)


def _select_of_expand(sdg: SDG, op: ops.IndexSelectOp) -> bool:
    """Picking one element along a dim an `expand` broadcast (one it prepended, or a
    size-1 one) gives the expand's input, broadcast or reshaped to the result: autodiff
    makes these for means over time."""
    x_e, idx_e = sdg.in_edges[op.op_id]
    mid = sdg.ops[x_e.src.op_id]
    out = sdg.tensors[TensorId(op.op_id, 0)].shape
    if not isinstance(mid, ops.ExpandOp) or not x_e.is_point() or len(sdg.read_shape(idx_e)):
        return False
    inner = through(sdg, x_e)
    if inner is None or not inner.is_point():
        return False
    src_shape = sdg.read_shape(inner)
    if not src_shape.is_static():
        return False
    src = tuple(src_shape.as_static())
    lead = len(sdg.tensors[x_e.src].shape) - len(src)
    if op.dim < lead:
        read = (inner.src, inner.expr)
    elif src[op.dim - lead] == 1:  # a size-1 dim the expand broadcast: squeeze it first
        k = op.dim - lead
        squeezed = src[:k] + src[k + 1:]
        if same_shape(Shape.from_(squeezed), out):
            sdg.redefine(ops.ReshapeOp(shape=out, op_id=op.op_id, domain=op.domain,
                                       site=op.site, tags=op.tags), [(inner.src, inner.expr)])
            return True
        mid_op = ops.ReshapeOp(shape=Shape.from_(squeezed), op_id=sdg.new_id(),
                               domain=op.domain, site=op.site)
        sdg.add_inferred(mid_op, [(inner.src, inner.expr)])
        read = (TensorId(mid_op.op_id, 0), op.domain.basis_expr)
    else:
        return False
    new = ops.ExpandOp(shape=out, op_id=op.op_id, domain=op.domain, site=op.site, tags=op.tags)
    sdg.redefine(new, [read])
    return True


def _composed(sdg: SDG, inner: Edge, mid: ops.Op, outer: Edge) -> Edge | None:
    """`inner` (a read of `mid`) as a point read at `outer`'s reader, or None."""
    if inner.cond is not None:
        return None
    expr = compose(inner.expr, mid.domain.variables, outer.expr)
    if expr is None or not all(m.is_point() for m in expr):
        return None
    return Edge(outer.sink, inner.sink_in, inner.src, expr)


def _unit_reshapes_around_binary(sdg: SDG, op: ops.ReshapeOp) -> bool:
    """`reshape(f(reshape(x), c))` back to x's shape, where both reshapes only add or drop
    size-1 dims ahead of the trailing dims `c` spans, is `f(x, c)`: the same elements,
    paired the same way. The API's matmul squeeze and a bias add make this around every
    Linear layer on a row (two kernel calls per layer and step in an RL rollout)."""
    e = sdg.in_edges[op.op_id][0]
    mid = sdg.ops[e.src.op_id]
    if (not isinstance(mid, ops.BinaryOp) or e.cond is not None or not e.is_point()
            or len(sdg.out_edges.get(mid.op_id, [])) != 1 or sdg.is_kept(mid.op_id)):
        return False
    out, res = sdg.tensors[TensorId(op.op_id, 0)].shape, sdg.tensors[e.src].shape
    if not (out.is_static() and res.is_static()):
        return False
    S, R = tuple(out.as_static()), tuple(res.as_static())
    if [d for d in S if d != 1] != [d for d in R if d != 1]:
        return False
    reads = [_composed(sdg, x, mid, e) for x in sdg.in_edges[mid.op_id]]
    if any(r is None for r in reads):
        return False
    new: list[tuple[TensorId, IndexSequence]] = []
    unwrapped = 0
    for r in reads:
        assert r is not None
        src = sdg.ops[r.src.op_id]
        shape = sdg.read_shape(r)
        if isinstance(src, ops.ReshapeOp) and shape.is_static() and tuple(shape) == R:
            x = _composed(sdg, sdg.in_edges[src.op_id][0], src, r)
            if x is not None and sdg.read_shape(x).is_static() and tuple(
                    sdg.read_shape(x).as_static()) == S:
                new.append((x.src, x.expr))
                unwrapped += 1
                continue
        k = len(shape)
        if not shape.is_static() or k > min(len(S), len(R)) or (
                k and S[len(S) - k:] != R[len(R) - k:]):
            return False
        new.append((r.src, r.expr))
    if unwrapped != 1:
        return False
    sdg.redefine(replace(mid, op_id=op.op_id, domain=op.domain, site=op.site), new)
    return True


def _noop_permute(sdg: SDG, op: ops.PermuteOp) -> bool:
    return op.dims == tuple(range(len(op.dims))) and alias_input(sdg, op)


def _noop(sdg: SDG, op: ops.Op) -> bool:
    """Casts to the same dtype, reshapes and expands to the same shape, empty sums
    (`alias` checks that the input already has the output's shape and dtype)."""
    if isinstance(op, ops.SumOp) and op.dims:
        return False
    return alias_input(sdg, op)


# ---------------------------------------------------------------- elementwise identities
def _all(v: np.ndarray, pred: Callable[[np.ndarray], np.ndarray]) -> bool:
    return bool(v.size) and bool(pred(v).all())


def _neutral(fn: str, k: int, v: np.ndarray) -> bool:
    """Whether the constant `v` as operand `k` of `fn` gives back the other operand."""
    is_float = is_float_np(v.dtype)
    zero = _all(v, lambda a: a == 0)
    if fn == "add":  # x + (+0.0) is +0.0 for x = -0.0: only -0.0 is neutral for floats
        return zero and (not is_float or _all(v, np.signbit))
    if fn == "sub":
        return k == 1 and zero and (not is_float or not np.signbit(v).any())
    if fn == "and" and v.dtype == bool:
        return _all(v, lambda a: a)
    if fn == "or" and v.dtype == bool:
        return not v.any() and bool(v.size)
    one = _all(v, lambda a: a == 1)
    return one and (fn == "mul" or (k == 1 and fn in ("div", "pow")))


def _identity_operand(sdg: SDG, op: ops.BinaryOp) -> bool:
    es = sdg.in_edges[op.op_id]
    for k in (0, 1):
        v = read_value(sdg, es[k])
        if v is not None and es[1 - k].cond is None and _neutral(op.fn, k, v):
            if alias(sdg, op, es[1 - k].src, es[1 - k].expr):
                return True
    return False


def _decided_where(sdg: SDG, op: ops.WhereOp) -> bool:
    """`where(c, a, b)` with a constant condition true (false) everywhere is `a` (`b`),
    when that input has the where's shape and dtype (`t < limit` folded, symbol_ranges)."""
    cond = sdg.in_edges[op.op_id][0]
    value = read_value(sdg, cond)
    if value is None or value.size == 0 or not (value.all() or not value.any()):
        return False
    return alias_input(sdg, op, 1 if value.all() else 2)


RULES: tuple[Rule, ...] = (
    Rule("alias_merge", (ops.MergeOp,), _alias_merge),
    Rule("prune_branches", (ops.MergeOp,), _prune_branches),
    Rule("merge_fixed_reads", (ops.MergeOp,), merge_fixed_reads),
    Rule("ident", (ops.IdentOp,), _ident),
    Rule("noop_cast", (ops.CastOp,), _noop),
    Rule("noop_reshape", (ops.ReshapeOp,), _noop),
    Rule("noop_expand", (ops.ExpandOp,), _noop),
    Rule("noop_sum", (ops.SumOp,), _noop),
    Rule("noop_permute", (ops.PermuteOp,), _noop_permute),
    Rule("cast_chain", (ops.CastOp,), _cast_chain),
    Rule("reshape_chain", (ops.ReshapeOp,), _reshape_chain),
    Rule("permute_chain", (ops.PermuteOp,), _permute_chain),
    Rule("expand_chain", (ops.ExpandOp,), _expand_chain),
    Rule("double_neg", (ops.UnaryOp,), _double_neg),
    Rule("select_of_expand", (ops.IndexSelectOp,), _select_of_expand),
    Rule("unit_reshapes_around_binary", (ops.ReshapeOp,), _unit_reshapes_around_binary),
    Rule("identity_operand", (ops.BinaryOp,), _identity_operand),
    Rule("decided_where", (ops.WhereOp,), _decided_where),
    Rule("sum_of_cat", (ops.SumOp,), sum_of_cat),
    Rule("lift_cumsum", (ops.MergeOp,), lift_cumsum),
    *(Rule(name, kinds, fn) for name, (kinds, fn) in lower_fused.rules().items()),
)
"""Every rule, in the order they are tried on an op."""
