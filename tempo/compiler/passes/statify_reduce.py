"""Statify for reductions (ARCHITECTURE §5.4): a sum or a max over the range of a read
whose length depends on a loop variable — `x[0:t+1].sum(0)`, `.mean(0)`, `.max(0)`,
`.min()`, `logsumexp` (a max, then a sum of `exp(x - max)`), windows, and the backward's
`g[t:T]` reads (an index off the range dim, then a sum over it) — becomes one
`TiledReduceOp` over static blocks of `inc_statify_block_size` points.

What is tiled: the reduction (a `SumOp` whose dims hold the range dim 0, a `MaxOp` over dim
0 or over the read flattened) and the ops between it and the reads that map rows to rows —
elementwise ops, casts, index selects off the range dim — when nothing else reads them.
Their other operands are either reads of the same range (blocked too, row by row) or
values of static shape at the op's point (a keepdim max, a constant, the index).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tempo.core import ops
from tempo.core.index_expr import IndexExpr, Slice
from tempo.core.op_base import Op
from tempo.core.ops_region import REGION_INPUT, Ref
from tempo.core.sdg import SDG, Edge, TensorId

ROW_WISE: tuple[type[Op], ...] = (ops.UnaryOp, ops.BinaryOp, ops.WhereOp, ops.CastOp,
                                  ops.IdentOp, ops.IndexSelectOp)
"""Ops that map each row of the range to a row of their output (an index select only
off dim 0): a block of rows goes through them on its own."""


def run(sdg: SDG, block: int, variables: set[str]) -> None:
    for op in list(sdg.ops.values()):
        if op.op_id not in sdg.ops or sdg.is_kept(op.op_id):
            continue
        if (isinstance(op, ops.SumOp) and 0 in op.dims) or (
                isinstance(op, ops.MaxOp) and op.dim == 0):
            m = _Match.of(sdg, op, variables)
            if m is not None:
                _rewrite(sdg, op, m, block)


def _text(x: object) -> str:
    return str(x.simplify()) if isinstance(x, IndexExpr) else str(x)


def _dynamic_length(e: Edge, variables: set[str]) -> bool:
    sl = [m for m in e.expr if isinstance(m, Slice)]
    if e.cond is not None or len(sl) != 1:
        return False
    return bool({s.name for s in sl[0].length().simplify().vars_used()} & variables)


def _static(shape: Iterable[Any]) -> bool:
    """No dim depends on a loop variable (bounds are constants of the compiled program)."""
    return all(isinstance(d, int) or (isinstance(d, IndexExpr) and not d.vars_used())
               for d in shape)


def _ints(sdg: SDG, shape: Iterable[Any]) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) else int(d.evaluate(sdg.bound_defs)) for d in shape)


def _same_point(sdg: SDG, e: Edge) -> bool:
    src, sink = sdg.ops[e.src.op_id].domain, sdg.ops[e.sink].domain
    names = [v.name for v in sink.variables]
    return (e.cond is None and [v.name for v in src.variables] == names
            and [str(m) for m in e.expr] == names)


@dataclass
class _Match:
    """The walk back from the reduction: its body members (in dependence order), the range
    reads and the static operands, and the reduced value."""

    sdg: SDG
    variables: set[str]
    length: str = ""
    range_expr: str = ""
    members: list[int] = field(default_factory=list)
    blocked: list[Edge] = field(default_factory=list)
    statics: list[Edge] = field(default_factory=list)
    result: tuple[str, int] = ("", 0)
    flat_op: int | None = None  # max(): the flattening reshape before the max

    @classmethod
    def of(cls, sdg: SDG, red: Op, variables: set[str]) -> _Match | None:
        m = cls(sdg, variables)
        (e,) = sdg.in_edges[red.op_id]
        chain = {red.op_id}
        if isinstance(red, ops.MaxOp) and not _dynamic_length(e, variables):
            src = sdg.ops[e.src.op_id]  # max(): the max of the flattened value
            if isinstance(src, ops.ReshapeOp) and len(tuple(sdg.read_shape(e))) == 1 and (
                    _same_point(sdg, e) and m._only_read_by(e.src, chain)):
                m.flat_op, e = src.op_id, sdg.in_edges[src.op_id][0]
                chain.add(src.op_id)
        got = m._value(e)
        if got is None or not m.blocked or not _static(
                sdg.tensors[TensorId(red.op_id, 0)].shape):
            return None
        m.result = got
        chain |= set(m.members)
        if not all(m._only_read_by(TensorId(i, 0), chain) for i in m.members):
            return None
        return m

    def _only_read_by(self, tid: TensorId, sinks: set[int]) -> bool:
        sdg = self.sdg
        return not sdg.is_kept(tid.op_id) and all(
            r.sink in sinks and _same_point(sdg, r) for r in sdg.readers(tid))

    def _value(self, e: Edge) -> tuple[str, int] | None:
        """What edge `e` gives the body: ("b", k) the k-th range read, ("s", k) the k-th
        static operand, ("m", op id) a member's output; None if the walk fails."""
        sdg = self.sdg
        if _dynamic_length(e, self.variables):
            shape = tuple(sdg.read_shape(e))
            if not self.blocked:
                self.length, self.range_expr = _text(shape[0]), str(e.expr)
            elif str(e.expr) != self.range_expr:
                return None
            if not _static(shape[1:]):
                return None
            for k, b in enumerate(self.blocked):
                if b.src == e.src:
                    return ("b", k)
            self.blocked.append(e)
            return ("b", len(self.blocked) - 1)
        shape = tuple(sdg.read_shape(e))
        if _static(shape):
            self.statics.append(e)
            return ("s", len(self.statics) - 1)
        op = sdg.ops[e.src.op_id]
        if op.op_id in self.members:
            return ("m", op.op_id)
        if not (isinstance(op, ROW_WISE) and op.num_outputs == 1 and _same_point(sdg, e)
                and not op.runtime_exprs()) or (
                    isinstance(op, ops.IndexSelectOp) and op.dim == 0):
            return None
        for inp in sdg.in_edges[op.op_id]:
            if self._value(inp) is None:
                return None
        out = tuple(sdg.tensors[TensorId(op.op_id, 0)].shape)
        if not out or _text(out[0]) != self.length or not _static(out[1:]):
            return None
        self.members.append(op.op_id)
        return ("m", op.op_id)

    def ref(self, v: tuple[str, int]) -> Ref:
        kind, k = v
        if kind == "b":
            return Ref(REGION_INPUT, k)
        if kind == "s":
            return Ref(REGION_INPUT, len(self.blocked) + k)
        return Ref(self.members.index(k), 0)


def _rewrite(sdg: SDG, red: Op, m: _Match, block: int) -> None:
    body = tuple(sdg.ops[i] for i in m.members)
    reads = []
    for i in m.members:
        reads.append(tuple(m.ref(_operand(m, e)) for e in sdg.in_edges[i]))
    info = sdg.tensors[TensorId(red.op_id, 0)]
    if isinstance(red, ops.SumOp):
        kind, dims, keep = "sum", red.dims, red.keepdim
    else:
        assert isinstance(red, ops.MaxOp)
        kind, dims, keep = "max", (0,), red.keepdim
    tiled = ops.TiledReduceOp(
        op_id=sdg.new_id(), domain=red.domain, site=red.site, kind=kind, body=body,
        reads=tuple(reads), result=m.ref(m.result), n_blocked=len(m.blocked), dims=dims,
        keepdim=keep, flat=m.flat_op is not None, out_shape=_ints(sdg, info.shape),
        out_dtype=info.dtype, block=block)
    sdg.add_inferred(tiled, [(e.src, e.expr) for e in (*m.blocked, *m.statics)])
    for k in range(red.num_outputs):
        sdg.replace_all_uses(TensorId(red.op_id, k), TensorId(tiled.op_id, k))
    sdg.remove_ops([red.op_id])
    chain = [*([] if m.flat_op is None else [m.flat_op]), *m.members]
    unread = [i for i in chain if i in sdg.ops and not sdg.out_edges.get(i)]
    while unread:
        sdg.remove_ops(unread)
        unread = [i for i in chain if i in sdg.ops and not sdg.out_edges.get(i)]


def _operand(m: _Match, e: Edge) -> tuple[str, int]:
    """The value a member's input edge was given in the walk (edges are matched by their
    source and index, as the walk recorded them)."""
    for k, b in enumerate(m.blocked):
        if b.src == e.src and str(b.expr) == str(e.expr):
            return ("b", k)
    for k, s in enumerate(m.statics):
        if s is e or (s.src == e.src and str(s.expr) == str(e.expr) and s.sink == e.sink
                      and s.sink_in == e.sink_in):
            return ("s", k)
    return ("m", e.src.op_id)
