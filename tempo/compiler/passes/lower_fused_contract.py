"""Attention written with broadcast products and sums, as `api/nn/attention.py` records it,
lowered to the attention primitive (`ops.AttentionOp`): part of `lower_fused` (see there
for when it runs), under the rule name `lower_attention` with the matmul form.

Recognised, ending at the second sum:

    s = (a * b).sum(e) * c1 / c2 ...     a, b broadcast against each other (unsqueeze,
                                          permute, numpy's leading dims); scalar scales
    p = s.softmax(ks)                     the primitive, or the composite lowered before
    out = (p' * w).sum(ks')               p' a view of p, ks' the softmax dim in it

The dims of the first product are classified by which operand really has them (not a
size-1 dim inserted by a view or by broadcasting): both and summed — the contraction E;
both — batch dims; only the operand that has the softmax dim — that dim is the keys S
(the operand is k; no other dim may be k's only); only the other operand (q) — query
dims, folded into the primitive's rows L. So grouped-query attention's `rep` dim (a
query-head dim the keys broadcast over) becomes rows of its KV head, exactly. In the
second product, p' and w share the batch dims and S (summed), the query dims are p''s
only, and w's only dims are the value features Ev. q, k and w are read as
(batch..., L, E), (batch..., S, E) and (batch..., S, Ev) through permutes (and reshapes
where dims fold), and the output is put back in the sum's layout.

Near misses stay composite: another dim only the keys have (q broadcast over a batch
dim), a dim broadcast from a real size-1 dim of the other side's batch, the softmax over
a batch or query dim, anything between the probabilities and the second product (the
API's attention dropout), masks (the matmul form takes them), and any intermediate read
from outside (the checks of `lower_fused_match`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tempo.compiler.passes.lower_fused_attention import _only_for, _times_const
from tempo.compiler.passes.lower_fused_match import Match, Walk
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.index_expr import IndexSequence
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import Shape, dims_equal

Dims = list[int | None]  # per dim of a product: the dim of the operand's source, or None


def _one(d: object) -> bool:
    return isinstance(d, int) and d == 1


@dataclass
class _Operand:
    """One side of a broadcast product: the read it starts from and, per product dim, the
    dim of that read it has (None: a unit inserted by a view or by broadcasting)."""

    read: Edge
    dims: Dims


def _reshape_map(src: tuple[object, ...], dst: tuple[object, ...]) -> Dims | None:
    """For a reshape that only inserts or drops size-1 dims: per dst dim, the src dim it
    is (None for an inserted unit); None if the reshape moves elements."""
    out: Dims = []
    i = 0
    for d in dst:
        while i < len(src) and _one(src[i]) and not _one(d):
            i += 1  # a dropped unit
        if i < len(src) and dims_equal(src[i], d):
            out.append(i)
            i += 1
        elif _one(d):
            out.append(None)
        else:
            return None
    return out if all(_one(s) for s in src[i:]) else None


def _view_step(m: Match, e: Edge, absorb: bool) -> tuple[Edge, Dims] | None:
    """If `e` reads a unit-inserting reshape or a permute: (the view's own read, per dim
    of `e`'s value the dim of that read). With `absorb` the view must be absorbable
    (`m.inner`); without, only a view nothing else reads (else it is the source)."""
    op = m.sdg.ops[e.src.op_id]
    if not isinstance(op, ops.ReshapeOp | ops.PermuteOp):
        return None
    if not absorb and not _only_for(m, e):
        return None
    src = m.arg(op, 0)
    if isinstance(op, ops.ReshapeOp):
        got = _reshape_map(tuple(m.sdg.read_shape(src)), tuple(m.shape(op)))
    else:
        got = list(op.dims)
    if got is None or m.inner(e, type(op)) is None:
        return None
    return src, got


def _operand(m: Match, e: Edge, out: tuple[object, ...], absorb: bool) -> _Operand | None:
    """The operand `e` of a product of shape `out`, through its views, to its source: with
    `absorb` (the probabilities' side) the views are members up to the softmax; otherwise
    views read only here are members and the first other value is the source."""
    shape = tuple(m.sdg.read_shape(e))
    lead = len(out) - len(shape)
    if lead < 0:
        return None
    dims: Dims = [None] * lead + list(range(len(shape)))
    for k, d in enumerate(shape):  # a real size-1 dim broadcast against the other side
        if _one(d) and not _one(out[lead + k]):
            dims[lead + k] = None
        elif not dims_equal(d, out[lead + k]):
            return None
    while True:
        step = _view_step(m, e, absorb)
        if step is None:
            break
        e, inner = step
        dims = [None if d is None else inner[d] for d in dims]
    if not absorb and m.outer(e) is None:
        return None
    return _Operand(e, dims)


def _product(m: Match, e: Edge) -> tuple[ops.Op, tuple[object, ...]] | None:
    """The broadcast product `e` reads (absorbed) and its shape."""
    mul = m.inner(e, ops.BinaryOp, "mul")
    return None if mul is None else (mul, m.shape(mul))


@dataclass
class _Scores:
    """The first product: per dim its kind, and the operands q and k."""

    q: _Operand
    k: _Operand
    shape: tuple[object, ...]
    e: int
    s: int
    batch: list[int]
    query: list[int]
    of_scores: Dims  # per dim of the scores, the product dim (None: the kept summed dim)
    scale: float


def _scores(m: Match, e: Edge, ks: int) -> _Scores | None:
    """The scaled contraction `e` reads, with `ks` the softmax's dim of the scores."""
    scale = 1.0
    while not isinstance(m.sdg.ops[e.src.op_id], ops.SumOp):
        step = _times_const(m, e)
        if step is None:
            return None
        scale, e = scale * step[0], step[1]
    red = m.inner(e, ops.SumOp)
    if red is None or len(red.dims) != 1:
        return None
    got = _product(m, m.arg(red, 0))
    if got is None:
        return None
    mul, shape = got
    ce = red.dims[0] % len(shape)
    of_scores: Dims = [None if (d == ce) else d for d in range(len(shape))
                       if red.keepdim or d != ce]
    s = of_scores[ks] if ks < len(of_scores) else None
    a, b = (_operand(m, m.arg(mul, i), shape, False) for i in (0, 1))
    if a is None or b is None or s is None:
        return None
    q, k = (a, b) if b.dims[s] is not None and a.dims[s] is None else (b, a)
    if k.dims[s] is None or q.dims[s] is not None or q.dims[ce] is None or k.dims[ce] is None:
        return None
    batch, query = [], []
    for d in range(len(shape)):
        if d in (ce, s) or _one(shape[d]):
            continue  # a unit dim is nobody's (the views drop or insert it)
        has = (q.dims[d] is not None, k.dims[d] is not None)
        if has == (True, True):
            batch.append(d)
        elif has == (True, False):
            query.append(d)
        else:
            return None  # keys only (q broadcast over a batch dim)
    return _Scores(q, k, shape, ce, s, batch, query, of_scores, scale)


def lower_contracted_attention(sdg: SDG, op: ops.Op, walk: Walk | None = None) -> bool:
    """Attention in the product-and-sum form ending at the sum `op` (see the module)."""
    if not (isinstance(op, ops.SumOp) and len(op.dims) == 1):
        return False
    out2 = tuple(sdg.read_shape(next(iter(sdg.in_edges[op.op_id]))))
    for side in (0, 1):
        if _try(Match(sdg, op, walk), op, side, out2):
            return True
    return False


def _try(m: Match, op: ops.SumOp, side: int, out2: tuple[object, ...]) -> bool:
    """The second product's input `side` is the probabilities, the other the values."""
    got = _product(m, m.arg(op, 0))
    if got is None:
        return False
    mul, shape2 = got
    s2 = op.dims[0] % len(shape2)
    pe = _operand(m, m.arg(mul, side), shape2, True)
    w = _operand(m, m.arg(mul, 1 - side), shape2, False)
    if pe is None or w is None:
        return False
    sm = m.inner(pe.read, ops.SoftmaxOp)
    if sm is None or sm.log:
        return False
    sc = _scores(m, m.arg(sm, 0), sm.dim % m.rank(sm))
    if sc is None or not m.same_dims(m.shape(sm), [sc.shape[d] if d is not None else 1
                                                   for d in sc.of_scores]):
        return False
    # the second product's dims in the first's terms
    kinds: list[tuple[str, int]] = []
    for d in range(len(shape2)):
        pd = pe.dims[d]
        p1 = None if pd is None else sc.of_scores[pd]
        has_w = w.dims[d] is not None
        if d == s2:
            if p1 != sc.s or not has_w:
                return False
            kinds.append(("s", 0))
        elif _one(shape2[d]):
            kinds.append(("1", 0))
        elif p1 is not None and p1 in sc.batch and has_w:
            kinds.append(("b", sc.batch.index(p1)))
        elif p1 is not None and p1 in sc.query and not has_w:
            kinds.append(("q", sc.query.index(p1)))
        elif p1 is None and pe.dims[d] is None and has_w:
            kinds.append(("v", d))
        else:
            return False
    for kind, n in (("b", len(sc.batch)), ("q", len(sc.query))):
        if sorted(i for k, i in kinds if k == kind) != list(range(n)):
            return False  # a batch or query dim dropped or doubled
    values = [d for k, d in kinds if k == "v"]
    if not dims_equal(shape2[s2], sc.shape[sc.s]) or not _fits(m, sc, w):
        return False
    if not m.closed():
        return False
    return _rewrite(m, op, sc, w, kinds, values, shape2, s2)


def _fits(m: Match, sc: _Scores, w: _Operand) -> bool:
    """One float dtype for q, k, w and the output; the row and value folds static."""
    dts = {m.sdg.tensors[x.read.src].dtype for x in (sc.q, sc.k, w)}
    out = m.sdg.tensors[TensorId(m.final.op_id, 0)].dtype
    return len(dts) == 1 and dtypes.is_float(out) and dts == {out}


def _prod(sizes: list[object]) -> object | None:
    """The product of `sizes` (1 for none), None if it would multiply symbolic sizes."""
    if len(sizes) == 1:
        return sizes[0]
    n = 1
    for d in sizes:
        if not isinstance(d, int):
            return None
        n *= d
    return n


class _Build:
    """Adds the views around the primitive at the final op's point."""

    def __init__(self, m: Match, final: ops.Op) -> None:
        self.m, self.sdg, self.final = m, m.sdg, final
        self.at = final.domain.basis_expr

    def op(self, new: ops.Op, src: tuple[TensorId, IndexSequence]) -> tuple[TensorId,
                                                                           IndexSequence]:
        added = self.sdg.add_inferred(new, [src])
        return TensorId(added.op_id, 0), self.at

    def permute(self, src: tuple[TensorId, IndexSequence], perm: list[int]
                ) -> tuple[TensorId, IndexSequence]:
        if perm == list(range(len(perm))):
            return src
        f = self.final
        return self.op(ops.PermuteOp(op_id=self.sdg.new_id(), domain=f.domain, site=f.site,
                                     tags=f.tags, dims=tuple(perm)), src)

    def reshape(self, src: tuple[TensorId, IndexSequence], have: tuple[object, ...],
                want: tuple[object, ...]) -> tuple[TensorId, IndexSequence]:
        if Match.same_dims(have, want):
            return src
        f = self.final
        return self.op(ops.ReshapeOp(op_id=self.sdg.new_id(), domain=f.domain, site=f.site,
                                     tags=f.tags, shape=Shape.from_(want)), src)

    def arrange(self, x: _Operand, order: list[int], want: tuple[object, ...]
                ) -> tuple[TensorId, IndexSequence]:
        """x's source with the dims x has at product dims `order` first (in that order),
        then reshaped to `want` (its other dims are units)."""
        have = tuple(self.sdg.read_shape(x.read))
        lead = [x.dims[d] for d in order]
        perm = [int(d) for d in lead if d is not None] + [
            i for i in range(len(have)) if i not in lead]
        src = self.permute((x.read.src, x.read.expr), perm)
        return self.reshape(src, tuple(have[i] for i in perm), want)


def _rewrite(m: Match, op: ops.SumOp, sc: _Scores, w: _Operand, kinds: list[tuple[str, int]],
             values: list[int], shape2: tuple[object, ...], s2: int) -> bool:
    """The final sum becomes the primitive (or the view putting its output in the sum's
    layout), reading q, k and w arranged as (batch..., L|S, E|Ev)."""
    sdg = m.sdg
    batch = [sc.shape[d] for d in sc.batch]
    rows, feats = _prod([sc.shape[d] for d in sc.query]), _prod([shape2[d] for d in values])
    wb = [kinds.index(("b", j)) for j in range(len(sc.batch))]
    if rows is None or feats is None:
        return False  # symbolic dims folded together
    outs = [x for d, x in enumerate(kinds) if x[0] in "bqv"]
    canon = sorted(outs, key=lambda x: ("bqv".index(x[0]), x[1]))
    size = {("b", i): batch[i] for i in range(len(batch))}
    size.update({("q", i): sc.shape[d] for i, d in enumerate(sc.query)})
    size.update({("v", d): shape2[d] for d in values})
    e, s = sc.shape[sc.e], sc.shape[sc.s]
    b = _Build(m, op)
    q = b.arrange(sc.q, sc.batch + sc.query + [sc.e], (*batch, rows, e))
    k = b.arrange(sc.k, sc.batch + [sc.s, sc.e], (*batch, s, e))
    v = b.arrange(w, wb + [s2] + values, (*batch, s, feats))
    att = sdg.add_inferred(ops.AttentionOp(op_id=sdg.new_id(), domain=op.domain,
                                           site=op.site, tags=op.tags, scale=sc.scale),
                           [q, k, v])
    res = b.reshape((TensorId(att.op_id, 0), b.at), (*batch, rows, feats),
                    tuple(size[x] for x in canon))
    res = b.permute(res, [canon.index(x) for x in outs])
    out = tuple(sdg.tensors[TensorId(op.op_id, 0)].shape)
    res = b.reshape(res, tuple(size[x] for x in outs), out)
    last = sdg.ops[res[0].op_id]
    ins = [(x.src, x.expr) for x in sorted(sdg.in_edges[last.op_id], key=lambda x: x.sink_in)]
    sdg.remove_ops([last.op_id])  # nothing reads it yet: the final sum becomes it
    sdg.redefine(replace(last, op_id=op.op_id), ins)
    m.done()
    return True
