"""Statify (ARCHITECTURE §5.4): attention over a read whose length depends on a loop
variable — the history `k[0:t+1]`, a window `k[max(0,t-W+1):t+1]` — becomes one
`TiledAttentionOp` that consumes the keys and values as static blocks of
`inc_statify_block_size` points (the last one padded and masked with the softmax's
neutral element, -inf) and accumulates across blocks with an online softmax.

Without it every step has its own key length, so a backend that compiles per shape
(jax) compiles every attention kernel at every step, and a read spanning store blocks
copies the history; with it every kernel sees the same shapes at every step, and block
stores hand their blocks over as views.

The pattern is the forward of attention as programs write it (and as the API's
composites record it):

    scores = q @ K[lo:hi].permute(..., keys last)      (ReshapeOps keeping keys last,
    probs  = softmax(scale * scores, -1)                 scalar constant mul/div, any
    out    = probs @ V[lo:hi].permute(..., keys 2nd last) order, between the two matmuls)

with the same range on K and V and no other reader of any intermediate (a training
program reads the probabilities in backward: it keeps its ops untiled), or the attention
primitive (`scaled_dot_product_attention`, no mask) over such reads, whose backward
recomputes the probabilities from q, k and v: its forward is tiled in training too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tempo.compiler.passes import statify_pad, statify_reduce
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.index_expr import IndexExpr, IndexSequence, Slice
from tempo.core.sdg import SDG, Edge, TensorId


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    variables = {v.name for v in sdg.universe.variables}
    for op in list(sdg.ops.values()):
        if op.op_id not in sdg.ops:
            continue
        m = None
        if isinstance(op, ops.MatMulOp):
            m = _match(sdg, op, variables)
        elif isinstance(op, ops.AttentionOp):
            m = _match_sdpa(sdg, op, variables)
        if m is not None:
            _rewrite(sdg, op, m, cfg.inc_statify_block_size)
    statify_pad.run(sdg)
    statify_reduce.run(sdg, cfg.inc_statify_block_size, variables)
    return sdg


@dataclass
class _Match:
    q: Edge
    k: Edge
    v: Edge
    perm_k: tuple[int, ...]
    perm_v: tuple[int, ...]
    score_shape: tuple[int, ...]
    prob_shape: tuple[int, ...]
    scale: float
    chain: list[int]  # the ops the tiled op replaces (the final matmul excluded)
    mask: _Mask | None = None


@dataclass
class _Mask:
    """A user mask over the same range: its read, how its blocks are laid out against the
    scores (see `ops.TiledAttentionOp`), and the ops between the read and the mask op."""

    kind: str
    read: Edge
    perm: tuple[int, ...]
    shape: tuple[int, ...]
    at: tuple[int, ...] = ()
    scale: float = 1.0
    chain: list[int] = field(default_factory=list)


def _only_reader(sdg: SDG, tid: TensorId, sink: int) -> bool:
    """`tid` is read once, by `sink`, at the same point, and the user does not keep it."""
    rs = sdg.readers(tid)
    return (len(rs) == 1 and rs[0].sink == sink and not sdg.is_kept(tid.op_id)
            and _same_point(sdg, rs[0]))


def _same_point(sdg: SDG, e: Edge) -> bool:
    """A read of the producer at the reader's own point, unconditionally."""
    src, sink = sdg.ops[e.src.op_id].domain, sdg.ops[e.sink].domain
    names = [v.name for v in sink.variables]
    return (e.cond is None and [v.name for v in src.variables] == names
            and [str(m) for m in e.expr] == names)


def _same(a: object, b: object) -> bool:
    """Two dims are the same size (index expressions compare by their text: their `==`
    builds a condition)."""
    def text(x: object) -> str:
        return str(x.simplify()) if isinstance(x, IndexExpr) else str(x)

    return text(a) == text(b)


def _static(shape: Iterable[Any]) -> tuple[int, ...] | None:
    dims = tuple(shape)
    return dims if all(isinstance(d, int) for d in dims) else None


def _dynamic_read(sdg: SDG, perm: ops.Op, variables: set[str]) -> Edge | None:
    """The permute's one input, if it is a read of one slice whose length varies."""
    (e,) = sdg.in_edges[perm.op_id]
    sl = [m for m in e.expr if isinstance(m, Slice)]
    if e.cond is not None or len(sl) != 1:
        return None
    used = {s.name for s in sl[0].length().simplify().vars_used()}
    return e if used & variables else None


def _scalar_const(sdg: SDG, e: Edge) -> float | None:
    op = sdg.ops[e.src.op_id]
    if isinstance(op, ops.ConstOp) and op.value.size == 1 and e.cond is None:
        return float(op.value.reshape(()))
    return None


def _input(sdg: SDG, op_id: int, k: int) -> Edge:
    return next(e for e in sdg.in_edges[op_id] if e.sink_in == k)


def _match(sdg: SDG, mm2: ops.MatMulOp, variables: set[str]) -> _Match | None:
    p_edge, v_edge = _input(sdg, mm2.op_id, 0), _input(sdg, mm2.op_id, 1)
    chain: list[int] = []
    pv = sdg.ops[v_edge.src.op_id]
    if not (isinstance(pv, ops.PermuteOp) and _only_reader(sdg, v_edge.src, mm2.op_id)
            and len(pv.dims) >= 2 and pv.dims[-2] == 0):
        return None
    v_read = _dynamic_read(sdg, pv, variables)
    if v_read is None:
        return None
    chain.append(pv.op_id)
    key_len = sdg.read_shape(v_read)[0]
    prob = sdg.read_shape(p_edge)
    prob_shape = _static(tuple(prob)[:-1])
    if prob_shape is None or not _same(tuple(prob)[-1], key_len) or len(prob_shape) < 1:
        return None
    # back from the probabilities to the softmax, through reshapes keeping the keys last
    e, scale, score_shape, soft = p_edge, 1.0, None, None
    mask: _Mask | None = None
    while True:
        if not _only_reader(sdg, e.src, e.sink):
            return None
        op = sdg.ops[e.src.op_id]
        chain.append(op.op_id)
        shape = tuple(sdg.tensors[e.src].shape)
        if soft is not None and score_shape is None:
            score_shape = _static(shape[:-1])  # the softmax's input layout
            if score_shape is None:
                return None
        if isinstance(op, ops.ReshapeOp) and _same(shape[-1], key_len):
            e = _input(sdg, op.op_id, 0)
            if not _same(tuple(sdg.read_shape(e))[-1], key_len):
                return None
        elif isinstance(op, ops.SoftmaxOp) and soft is None and not op.log and (
                op.dim in (-1, len(shape) - 1)):
            soft = op
            e = _input(sdg, op.op_id, 0)
        elif soft is not None and isinstance(op, ops.BinaryOp) and op.fn in ("mul", "div"):
            a, b = _input(sdg, op.op_id, 0), _input(sdg, op.op_id, 1)
            c_b, c_a = _scalar_const(sdg, b), _scalar_const(sdg, a)
            if c_b is not None and c_b != 0:
                scale, e = (scale * c_b if op.fn == "mul" else scale / c_b), a
            elif c_a is not None and op.fn == "mul":
                scale, e = scale * c_a, b
            else:
                return None
        elif soft is not None and mask is None and isinstance(op, ops.BinaryOp | ops.WhereOp) and (
                (mk := _mask_op(sdg, op, variables)) is not None):
            mask, e = mk
            at = _static(shape[:-1])
            if at is None or not _same(shape[-1], key_len):
                return None
            mask.at, mask.scale = at, scale
        elif soft is not None and isinstance(op, ops.MatMulOp):
            chain.pop()  # the scores' matmul: checked below
            break
        else:
            return None
    mm1 = op
    q_edge, kp_edge = _input(sdg, mm1.op_id, 0), _input(sdg, mm1.op_id, 1)
    chain.append(mm1.op_id)
    pk = sdg.ops[kp_edge.src.op_id]
    if q_edge.cond is not None or not (
            isinstance(pk, ops.PermuteOp) and _only_reader(sdg, kp_edge.src, mm1.op_id)
            and len(pk.dims) >= 2 and pk.dims[-1] == 0
            and len(tuple(sdg.read_shape(q_edge))) >= 2):
        return None
    k_read = _dynamic_read(sdg, pk, variables)
    if k_read is None or str(k_read.expr) != str(v_read.expr) or score_shape is None:
        return None
    if sdg.tensors[q_edge.src].dtype != sdg.tensors[k_read.src].dtype or (
            sdg.tensors[k_read.src].dtype != sdg.tensors[v_read.src].dtype):
        return None
    chain.append(pk.op_id)
    if mask is not None:
        if str(mask.read.expr) != str(k_read.expr):
            return None
        chain += mask.chain
    return _Match(q_edge, k_read, v_read, pk.dims, pv.dims, score_shape, prob_shape, scale,
                  chain, mask)


def _sdpa_operand(sdg: SDG, e: Edge, sink: int, variables: set[str]
                  ) -> tuple[Edge, tuple[int, ...]] | None:
    """A key/value operand of attention `(..., S, E)` as (the dynamic read, the permutation
    that makes the operand of it): a permuted read, or a read of 2-D points as it is."""
    if e.cond is not None:
        return None
    op = sdg.ops[e.src.op_id]
    if isinstance(op, ops.PermuteOp) and _same_point(sdg, e):
        read = _dynamic_read(sdg, op, variables)
        return None if read is None else (read, op.dims)
    sl = [m for m in e.expr if isinstance(m, Slice)]
    if len(sl) == 1 and len(sdg.tensors[e.src].shape) == 1 and (
            {x.name for x in sl[0].length().simplify().vars_used()} & variables):
        return e, (0, 1)
    return None


def _match_sdpa(sdg: SDG, att: ops.AttentionOp, variables: set[str]) -> _Match | None:
    """The attention primitive (no mask: a causal or explicit mask is over L x S) whose
    keys and values are (permuted) reads of one dynamic range."""
    if att.causal:
        return None
    q, k, v = (_input(sdg, att.op_id, i) for i in range(3))
    mask = None
    if att.masked:
        m_edge = _input(sdg, att.op_id, 3)
        bool_mask = dtypes.is_bool(sdg.tensors[m_edge.src].dtype)
        mask = _mask_operand(sdg, m_edge, variables, "keep" if bool_mask else "add")
        if mask is None:
            return None
    ks, vs = _sdpa_operand(sdg, k, att.op_id, variables), _sdpa_operand(
        sdg, v, att.op_id, variables)
    if q.cond is not None or ks is None or vs is None or str(ks[0].expr) != str(vs[0].expr):
        return None
    (k_read, dk), (v_read, dv) = ks, vs
    if dk[-2] != 0 or dv[-2] != 0:
        return None
    rows = _static(tuple(sdg.read_shape(q))[:-1])
    if rows is None:
        return None
    perm_k = (*dk[:-2], dk[-1], dk[-2])  # k^T: the keys last
    chain = [e.src.op_id for e in (k, v) if e.src.op_id not in (k_read.src.op_id,
                                                                v_read.src.op_id)]
    if mask is not None:
        if str(mask.read.expr) != str(k_read.expr):
            return None
        mask.at, chain = rows, chain + mask.chain
    return _Match(q, k_read, v_read, perm_k, dv, rows, rows, att.scale, chain, mask)


def _rewrite(sdg: SDG, mm2: ops.Op, m: _Match, block: int) -> None:
    """Add the tiled op at the final op's domain, move its readers there, and drop the
    final op and the chain's ops nothing else reads."""
    out = _static(tuple(sdg.tensors[TensorId(mm2.op_id, 0)].shape))
    if out is None or sdg.is_kept(mm2.op_id):  # the user reads it by its id
        return
    tiled = ops.TiledAttentionOp(
        op_id=sdg.new_id(), domain=mm2.domain, site=mm2.site, perm_k=m.perm_k,
        perm_v=m.perm_v, score_shape=m.score_shape, prob_shape=m.prob_shape, scale=m.scale,
        out_shape=out, block=block, **_mask_params(m.mask))
    reads: list[tuple[TensorId, IndexSequence]] = [
        (m.q.src, m.q.expr), (m.k.src, m.k.expr), (m.v.src, m.v.expr)]
    if m.mask is not None:
        reads.append((m.mask.read.src, m.mask.read.expr))
    sdg.add_inferred(tiled, reads)
    new = TensorId(tiled.op_id, 0)
    sdg.replace_all_uses(TensorId(mm2.op_id, 0), new)
    sdg.remove_ops([mm2.op_id])
    unread = [i for i in m.chain if not sdg.out_edges.get(i) and not sdg.is_kept(i)]
    while unread:
        sdg.remove_ops(unread)
        unread = [i for i in m.chain if i in sdg.ops and not sdg.out_edges.get(i)
                  and not sdg.is_kept(i)]


# ---------------------------------------------------------------- masks
def _mask_params(mask: _Mask | None) -> dict[str, Any]:
    if mask is None:
        return {}
    return {"mask": mask.kind, "perm_m": mask.perm, "mask_shape": mask.shape,
            "mask_at": mask.at, "mask_scale": mask.scale}


def _neg_inf(sdg: SDG, e: Edge) -> bool:
    c = _scalar_const(sdg, e)
    return c is not None and c == float("-inf")


def _mask_op(sdg: SDG, op: ops.Op, variables: set[str]) -> tuple[_Mask, Edge] | None:
    """A mask applied to the scores: `scores + M` (either order), `where(M, scores, -inf)`
    or `where(M, -inf, scores)`, M from a read of a growing range; (the mask, the edge the
    scores come in by)."""
    ins = sdg.in_edges[op.op_id]
    if isinstance(op, ops.BinaryOp) and op.fn == "add":
        for m_e, s_e in ((ins[1], ins[0]), (ins[0], ins[1])):
            mk = _mask_operand(sdg, m_e, variables, "add")
            if mk is not None and dtypes.is_float(sdg.tensors[m_e.src].dtype):
                return mk, s_e
        return None
    if isinstance(op, ops.WhereOp):
        c, a, b = (_input(sdg, op.op_id, i) for i in range(3))
        kind, s_e = ("keep", a) if _neg_inf(sdg, b) else ("drop", b) if _neg_inf(sdg, a) else (
            "", a)
        mk = _mask_operand(sdg, c, variables, kind) if kind else None
        return None if mk is None else (mk, s_e)
    return None


def _mask_operand(sdg: SDG, e: Edge, variables: set[str], kind: str) -> _Mask | None:
    """The mask operand `e`: a read of a growing range `M[lo:hi]` (its range last after
    an optional permute, then reshapes; a boolean one maybe negated), its other dims
    static."""
    shape = _static(tuple(sdg.read_shape(e))[:-1])
    chain: list[int] = []
    perm: tuple[int, ...] | None = None
    cur = e
    while shape is not None:
        sl = [m for m in cur.expr if isinstance(m, Slice)]
        if cur.cond is None and len(sl) == 1 and (
                {x.name for x in sl[0].length().simplify().vars_used()} & variables):
            n = len(tuple(sdg.read_shape(cur)))
            perm = perm if perm is not None else tuple(range(n))
            if perm[-1] != 0 or _static(tuple(sdg.read_shape(cur))[1:]) is None:
                return None
            return _Mask(kind, cur, perm, shape, chain=chain)
        op = sdg.ops[cur.src.op_id]
        negate = isinstance(op, ops.UnaryOp) and op.fn == "not" and kind != "add"
        if not (_only_reader(sdg, cur.src, cur.sink) and (negate or isinstance(
                op, ops.ReshapeOp | ops.PermuteOp))) or perm is not None:
            return None
        if negate:
            kind = "drop" if kind == "keep" else "keep"
        elif isinstance(op, ops.PermuteOp):
            perm = op.dims
        chain.append(op.op_id)
        cur = _input(sdg, op.op_id, 0)
    return None
