"""Batched products summed over a dim become one matmul.

Per point, small contractions are written as a broadcast product and a sum: a Linear layer
on a vector is `(w * x.unsqueeze(0)).sum(1)`, its weight gradient `g.unsqueeze(1) *
x.unsqueeze(0)` summed over the points. Batched over `D` points the product materialises
`D * out * in` elements before the sum reduces them (for PPO's 64x64 points and a 64x48
layer, 12.5 M floats per call); a matmul computes the same sums without them. This
rewrite runs on the ops the vectorisation pass batched: a `sum` over dims that both
factors of a `mul` have (the contracted dims) is `A' @ B'` where A' holds A's own dims
then the contracted ones, B' the contracted ones then B's own, and the dims both keep
become matmul batch dims. Permutes and reshapes bring the factors into that layout and
the result back to the sum's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.index_expr import IndexSequence, Symbol
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import Shape

# Below this many product elements the two kernels of mul + sum cost less than the up to
# six launches of the matmul form (layout ops included).
MIN_PRODUCT_ELEMENTS = 4096


@dataclass(frozen=True)
class _Layout:
    both: list[int]  # dims both factors have and the sum keeps: matmul batch dims
    own_a: list[int]  # dims only A has (B broadcasts along them)
    own_b: list[int]
    summed: list[int]


def _layout(sa: tuple[int, ...], sb: tuple[int, ...], summed: tuple[int, ...]
            ) -> _Layout | None:
    both, own_a, own_b = [], [], []
    for j, (a, b) in enumerate(zip(sa, sb)):
        if j in summed:
            if a != b:
                return None  # a sum along a dim one factor broadcasts: not a contraction
        elif a == b:
            both.append(j)
        elif b == 1:
            own_a.append(j)
        elif a == 1:
            own_b.append(j)
        else:
            return None
    return _Layout(both, own_a, own_b, sorted(summed))


class _Contraction:
    def __init__(self, sdg: SDG, s: ops.SumOp, m: ops.Op) -> None:
        self.sdg, self.s, self.m = sdg, s, m
        self.domain = m.domain

    def _op(self, op_cls: type[ops.Op], src: TensorId, expr: IndexSequence,
            **params: Any) -> TensorId:
        op = op_cls(op_id=self.sdg.new_id(), domain=self.domain, site=self.s.site, **params)
        self.sdg.add_inferred(op, [(src, expr)])
        return TensorId(op.op_id, 0)

    def _factor(self, e: Edge, rank: int, order: list[int], shape: tuple[int, ...]
                ) -> tuple[TensorId, IndexSequence]:
        """Read `e` brought to `rank` dims, permuted to `order`, reshaped to `shape`."""
        have = tuple(self.sdg.read_shape(e).as_static())
        basis = self.domain.basis_expr
        tid, expr = e.src, e.expr
        if len(have) < rank:
            have = (1,) * (rank - len(have)) + have
            tid, expr = self._op(ops.ReshapeOp, tid, expr, shape=Shape.from_(have)), basis
        if order != sorted(order):
            tid, expr = self._op(ops.PermuteOp, tid, expr, dims=tuple(order)), basis
            have = tuple(have[j] for j in order)
        if have != shape:
            tid, expr = self._op(ops.ReshapeOp, tid, expr, shape=Shape.from_(shape)), basis
        return tid, expr

    def rewrite(self, lay: _Layout, pa: tuple[int, ...], out: tuple[int, ...]) -> None:
        sdg, basis = self.sdg, self.domain.basis_expr
        ea, eb = sdg.in_edges[self.m.op_id]
        rank = len(out)
        sizes = [out[j] for j in lay.both]
        ka = math.prod(out[j] for j in lay.own_a)
        kb = math.prod(out[j] for j in lay.own_b)
        kc = math.prod(pa[j] for j in lay.summed)
        # each factor's broadcast (size-1) dims of the other's own dims go where the
        # reshape drops them
        a = self._factor(ea, rank, lay.both + lay.own_a + lay.summed + lay.own_b,
                         (*sizes, ka, kc))
        b = self._factor(eb, rank, lay.both + lay.own_a + lay.summed + lay.own_b,
                         (*sizes, kc, kb))
        mm = ops.MatMulOp(op_id=sdg.new_id(), domain=self.domain, site=self.s.site)
        sdg.add_inferred(mm, [a, b])
        kept = lay.both + lay.own_a + lay.own_b
        tid = TensorId(mm.op_id, 0)
        tid = self._op(ops.ReshapeOp, tid, basis, shape=Shape.from_(
            tuple(out[j] for j in kept)))
        final = sorted(kept)
        if kept != final:
            tid = self._op(ops.PermuteOp, tid, basis, dims=tuple(kept.index(j) for j in final))
        shape = sdg.tensors[TensorId(self.s.op_id, 0)].shape
        sdg.redefine(ops.ReshapeOp(op_id=self.s.op_id, domain=self.s.domain, shape=shape,
                                   site=self.s.site), [(tid, basis)])
        sdg.remove_op(self.m.op_id)


def _outer_products(sdg: SDG, batched: set[int]) -> None:
    """A batched matmul over a contracted dim of size 1 (`(..., m, 1) @ (..., 1, n)`, the
    weight gradient of a Linear layer on one row per point) is a broadcast product: as a
    matmul it runs as `D` tiny GEMMs, as a `mul` it is one elementwise kernel, and a sum
    reading it becomes one matmul below. The product of one term is the same number."""
    for mid in sorted(batched):
        m = sdg.ops.get(mid)
        if not isinstance(m, ops.MatMulOp) or not dtypes.is_float(
                sdg.tensors[TensorId(mid, 0)].dtype):
            continue
        ea, eb = sdg.in_edges[mid]
        sa, sb = sdg.read_shape(ea), sdg.read_shape(eb)
        if not (sa.is_static() and sb.is_static()) or min(len(sa), len(sb)) < 2:
            continue
        if sa.as_static()[-1] != 1 or sb.as_static()[-2] != 1:
            continue
        sdg.redefine(ops.BinaryOp(op_id=mid, domain=m.domain, fn="mul", site=m.site),
                     [(ea.src, ea.expr), (eb.src, eb.expr)])


def contract(sdg: SDG, batched: set[int]) -> None:
    """Rewrite each `sum(mul(a, b))` whose product is one of the `batched` ops into a
    matmul, where it is a contraction of static shapes with at least
    MIN_PRODUCT_ELEMENTS product elements (batched outer products first become such
    products)."""
    _outer_products(sdg, batched)
    for mid in sorted(batched):
        m = sdg.ops.get(mid)
        if not (isinstance(m, ops.BinaryOp) and m.fn == "mul") or sdg.is_kept(mid):
            continue
        readers = sdg.out_edges.get(mid, [])
        if len(readers) != 1 or not isinstance(sdg.ops[readers[0].sink], ops.SumOp):
            continue
        e = readers[0]
        s = sdg.ops[e.sink]
        assert isinstance(s, ops.SumOp)
        if ([v.name for v in m.domain.variables] != [v.name for v in s.domain.variables]
                or not all(isinstance(x, Symbol) and x.name == v.name
                           for x, v in zip(e.expr, m.domain.variables))):
            continue  # the sum must read the product at its own point
        out = sdg.tensors[e.src].shape
        if not out.is_static() or not dtypes.is_float(sdg.tensors[e.src].dtype):
            continue
        dims = tuple(out.as_static())
        if math.prod(dims) < MIN_PRODUCT_ELEMENTS:
            continue
        ea, eb = sdg.in_edges[m.op_id]
        sa, sb = sdg.read_shape(ea), sdg.read_shape(eb)
        if not (sa.is_static() and sb.is_static()):
            continue
        rank = len(dims)
        pa = (1,) * (rank - len(sa)) + tuple(sa.as_static())
        pb = (1,) * (rank - len(sb)) + tuple(sb.as_static())
        lay = _layout(pa, pb, s.dims)
        if lay is None or not lay.summed:
            continue
        _Contraction(sdg, s, m).rewrite(lay, pa, dims)
