"""Lowering hand-written attention to the attention primitive (`ops.AttentionOp`, torch's
`scaled_dot_product_attention`): part of `lower_fused` (see there for when it runs).

Recognised, ending at the second matmul:

    s = (q @ kT) * c1 / c2 ...      (scalar constants; or `(q * c) @ kT`)
    s = s + mask                     float mask, added after the scaling, or
    s = where(keep, s, -inf)         boolean mask (True: attend), or
    s = where(drop, -inf, s)         (masked_fill: the mask is `not drop`)
    out = s.softmax(-1) @ v          (the softmax primitive, or the composite `lower_fused`
                                      has lowered before this op is reached)

and for one query row (q (..., 1, E)) the same with the API's matmul squeeze: the scores
are (..., S) and `s.softmax(-1).unsqueeze(-2) @ v` (a mask then at most 1-D).

with q (..., L, E), kT (..., E, S), v (..., S, Ev) of equal rank, leading dims and float
dtype (nothing broadcast), a mask that does not widen the scores, and every intermediate
read only inside the pattern. kT is typically `k.transpose(-2, -1)` or a permuted read of
a growing history `k[0:t+1]`; the primitive reads `k` as kT with its last two dims
swapped, one permute composed with kT's own (so `statify` still sees a permuted dynamic
read and tiles the unmasked case).
"""

from __future__ import annotations

import math

from tempo.compiler.passes.lower_fused_match import Match, Walk
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.index_expr import IndexSequence
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import dims_equal


def _unit_row(m: Match, e: Edge, add: bool) -> ops.Op | None:
    """A reshape `e` reads that adds (or drops) the size-1 row dim at -2: the API's matmul
    squeezes a one-row product, and `p.unsqueeze(-2)` puts the row back."""
    rs = m.sdg.ops[e.src.op_id]
    if not isinstance(rs, ops.ReshapeOp):
        return None
    wide, narrow = m.shape(rs), tuple(m.sdg.read_shape(m.arg(rs, 0)))
    if not add:
        wide, narrow = narrow, wide
    if len(wide) != len(narrow) + 1 or len(narrow) < 1 or wide[-2] != 1 or not m.same_dims(
            wide[:-2] + wide[-1:], narrow):
        return None
    return m.inner(e, ops.ReshapeOp)


def _scaled(m: Match, e: Edge, squeezed: bool) -> tuple[ops.Op, float] | None:
    """The scores' matmul `e` reads through scalar-constant muls and divides (the
    constant divides only from the right) and, for one query row, the API's squeeze:
    (matmul, the product of the scales)."""
    scale = 1.0
    while True:
        rs = _unit_row(m, e, add=False) if squeezed else None
        mm = m.inner(e if rs is None else m.arg(rs, 0), ops.MatMulOp)
        if mm is not None:
            return mm, scale
        step = _times_const(m, e)
        if step is None:
            return None
        scale, e = scale * step[0], step[1]


def _times_const(m: Match, e: Edge) -> tuple[float, Edge] | None:
    """`v * c`, `c * v` or `v / c` that `e` reads, c a one-element constant: (the factor,
    the read of v)."""
    op = m.inner(e, ops.BinaryOp, ("mul", "div"))
    side = None if op is None else m.scalar_side(op)
    if op is None or side is None:
        return None
    c, rest = side
    if op.fn == "div":
        if rest != m.arg(op, 0) or c == 0.0:
            return None
        c = 1.0 / c
    return c, rest


def _masked(m: Match, e: Edge) -> tuple[Edge, Edge | None, bool] | None:
    """What the softmax reads: (the scaled scores' read, the mask's read, whether the mask
    is negated) — no mask: (e, None, False)."""
    op = m.sdg.ops[e.src.op_id]
    if isinstance(op, ops.WhereOp):
        w = m.inner(e, ops.WhereOp)
        if w is None:
            return None
        cond, a, b = m.args(w)
        if m.outer(cond) is None or not dtypes.is_bool(m.sdg.tensors[cond.src].dtype):
            return None
        neg_b, neg_a = m.scalar(b), m.scalar(a)
        if neg_b == -math.inf and neg_a is None:
            return a, cond, False
        if neg_a == -math.inf and neg_b is None:
            return b, cond, True
        return None
    if isinstance(op, ops.BinaryOp) and op.fn == "add":
        add = m.inner(e, ops.BinaryOp, "add")
        if add is None:
            return None
        a, b = m.arg(add, 0), m.arg(add, 1)
        for scores, mask in ((a, b), (b, a)):
            src = m.sdg.ops[scores.src.op_id]
            if isinstance(src, ops.MatMulOp | ops.BinaryOp) and m.outer(mask) is not None:
                if m.sdg.tensors[mask.src].dtype == m.sdg.tensors[scores.src].dtype:
                    return scores, mask, False
        return None
    return e, None, False


def _fits(m: Match, q: Edge, kt: Edge, v: Edge, scores: ops.Op, mask: Edge | None) -> bool:
    """Equal ranks and leading dims, one float dtype, a mask that does not widen the
    scores (its rank at most theirs and the masked scores keep their shape)."""
    qs, ks, vs = (tuple(m.sdg.read_shape(e)) for e in (q, kt, v))
    if not (len(qs) == len(ks) == len(vs) >= 2):
        return False
    if not all(dims_equal(a, b) and dims_equal(a, c) for a, b, c in zip(qs[:-2], ks[:-2],
                                                                     vs[:-2])):
        return False
    dts = {m.sdg.tensors[e.src].dtype for e in (q, kt, v)}
    out = m.sdg.tensors[TensorId(m.final.op_id, 0)].dtype
    if len(dts) != 1 or not dtypes.is_float(out) or dts != {out}:
        return False
    if mask is None:
        return True
    return len(m.sdg.read_shape(mask)) <= len(qs)


def lower_attention(sdg: SDG, op: ops.Op, walk: Walk | None = None) -> bool:
    """Attention ending at `op`: the matmul form here, the product-and-sum form in
    `lower_fused_contract`."""
    if isinstance(op, ops.SumOp):
        from tempo.compiler.passes.lower_fused_contract import lower_contracted_attention

        return lower_contracted_attention(sdg, op, walk)
    if not isinstance(op, ops.MatMulOp):
        return False
    m = Match(sdg, op, walk)
    p = m.arg(op, 0)
    row = _unit_row(m, p, add=True)  # one query row: softmax over (..., S), unsqueezed
    sm = m.inner(p if row is None else m.arg(row, 0), ops.SoftmaxOp)
    v = m.outer(m.arg(op, 1))
    if sm is None or v is None or sm.log or sm.dim % m.rank(sm) != m.rank(sm) - 1:
        return False
    got = _masked(m, m.arg(sm, 0))
    if got is None:
        return False
    s_read, mask, negate = got
    masked_op = sdg.ops[m.arg(sm, 0).src.op_id]
    if mask is not None and not m.same_dims(m.shape(masked_op), m.shape(
            sdg.ops[s_read.src.op_id])):
        return False
    if mask is not None and row is not None and len(sdg.read_shape(mask)) > 1:
        return False  # a mask over the squeezed (..., S) would broadcast differently
    sc = _scaled(m, s_read, row is not None)
    if sc is None:
        return False
    mm, scale = sc
    q, kt = m.outer(m.arg(mm, 0)), m.outer(m.arg(mm, 1))
    if q is None or kt is None:
        return False
    qop = sdg.ops[q.src.op_id]  # `(q * c) @ kT`: the scale moves into the primitive
    if isinstance(qop, ops.BinaryOp) and qop.fn in ("mul", "div"):
        probe = Match(sdg, op, walk)
        probe.members = set(m.members)
        inner = _scaled_q(probe, q)
        if inner is not None:
            m, (q, c) = probe, inner
            scale *= c
    if not _fits(m, q, kt, v, mm, mask) or not m.closed():
        return False
    return _rewrite(m, op, q, kt, v, mask, negate, scale)


def _scaled_q(m: Match, q: Edge) -> tuple[Edge, float] | None:
    """`q * c` / `c * q` / `q / c` read only by the scores: (the read of q, the scale)."""
    step = _times_const(m, q)
    rest_read = None if step is None else m.outer(step[1])
    return None if step is None or rest_read is None else (rest_read, step[0])


def _only_for(m: Match, e: Edge) -> bool:
    """`e` reads, at the reader's point, a value nothing else reads (so the reader may
    read what that value is made of instead)."""
    src = m.sdg.ops[e.src.op_id]
    return (e.cond is None and not m.cut(e) and not m.sdg.is_kept(src.op_id)
            and [v.name for v in src.domain.variables] == m.names
            and [str(x) for x in e.expr] == m.names
            and all(r.sink == e.sink for r in m.sdg.out_edges.get(src.op_id, [])))


def _rewrite(m: Match, op: ops.Op, q: Edge, kt: Edge, v: Edge, mask: Edge | None,
             negate: bool, scale: float) -> bool:
    """The final matmul becomes the primitive, reading k as kT with its last two dims
    swapped (and a negated boolean mask through a `not`)."""
    sdg = m.sdg
    n = len(sdg.read_shape(kt))
    at = op.domain.basis_expr
    k_src, k_at, swap = kt.src, kt.expr, (*range(n - 2), n - 1, n - 2)
    kp = sdg.ops[kt.src.op_id]
    if isinstance(kp, ops.PermuteOp) and _only_for(m, kt):  # kT = k.permute(...): one permute
        inner = m.arg(kp, 0)
        if inner.cond is None and not m.cut(inner):
            k_src, k_at, swap = inner.src, inner.expr, tuple(kp.dims[d] for d in swap)
    k_op = sdg.add_inferred(ops.PermuteOp(op_id=sdg.new_id(), domain=op.domain, site=op.site,
                                          tags=op.tags, dims=swap), [(k_src, k_at)])
    reads: list[tuple[TensorId, IndexSequence]] = [
        (q.src, q.expr), (TensorId(k_op.op_id, 0), at), (v.src, v.expr)]
    if mask is not None:
        if negate:
            not_op = sdg.add_inferred(ops.UnaryOp(op_id=sdg.new_id(), domain=op.domain,
                                                  site=op.site, tags=op.tags, fn="not"),
                                      [(mask.src, mask.expr)])
            reads.append((TensorId(not_op.op_id, 0), at))
        else:
            reads.append((mask.src, mask.expr))
    sdg.redefine(ops.AttentionOp(op_id=op.op_id, domain=op.domain, site=op.site, tags=op.tags,
                                 scale=scale, masked=mask is not None), reads)
    m.done()
    return True
