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
the result back to the sum's (one reshape where a permute would only move size-1
dims; of `a * b` and `b * a`, the order whose layout moves fewer elements). A factor's
summed dims along which the other broadcasts are summed first (`_reduce_first`); layout
ops and sums of a loop-invariant factor lose the batched domain, so they run once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tempo.compiler.passes.algebraic_rules import through
from tempo.compiler.passes.domain_reduction import reduce_op
from tempo.core import ops
from tempo.core.configs import TUNING
from tempo.core.dtype import dtypes
from tempo.core.index_expr import IndexSequence, Symbol
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import Shape


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
            **params: Any) -> tuple[TensorId, IndexSequence]:
        """A new op over the product's domain reading `src` at `expr`, reduced to the dims
        it varies along (a weight's layout ops run once, not at every batched step), and
        its read at the product's point."""
        op = op_cls(op_id=self.sdg.new_id(), domain=self.domain, site=self.s.site, **params)
        self.sdg.add_inferred(op, [(src, expr)])
        reduce_op(self.sdg, op)
        return _read_of(self.sdg, op.op_id, self.m)

    def _factor(self, e: Edge, rank: int, order: list[int], shape: tuple[int, ...]
                ) -> tuple[TensorId, IndexSequence]:
        """Read `e` brought to `rank` dims, permuted to `order`, reshaped to `shape`; one
        reshape when the permutation only moves size-1 dims (same element order). A read
        whose shape is static only once the bounds are known is reshaped to its values
        (a view), so the matmul's shape rule sees the same dims on both sides."""
        have = tuple(_shape(self.sdg, e).as_static())
        symbolic = not self.sdg.read_shape(e).is_static()
        tid, expr = e.src, e.expr
        padded = (1,) * (rank - len(have)) + have
        moved = [j for j in order if padded[j] != 1]
        if order != sorted(order) and moved != sorted(moved):
            if len(have) < rank:
                tid, expr = self._op(ops.ReshapeOp, tid, expr, shape=Shape.from_(padded))
            tid, expr = self._op(ops.PermuteOp, tid, expr, dims=tuple(order))
            have = tuple(padded[j] for j in order)
            symbolic = not self.sdg.tensors[tid].shape.is_static()
        elif isinstance(self.sdg.ops[e.src.op_id], ops.ReshapeOp) and e.is_point():
            inner = through(self.sdg, e)  # same element order: reshape the reshape's input
            if inner is not None and inner.is_point():
                tid, expr = inner.src, inner.expr
                have = tuple(_shape(self.sdg, inner).as_static())
                symbolic = not self.sdg.read_shape(inner).is_static()
        if have != shape or symbolic:
            tid, expr = self._op(ops.ReshapeOp, tid, expr, shape=Shape.from_(shape))
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
        read = (TensorId(mm.op_id, 0), basis)
        final = sorted(kept)
        if [j for j in kept if out[j] != 1] != [j for j in final if out[j] != 1]:
            read = self._op(ops.ReshapeOp, *read, shape=Shape.from_(
                tuple(out[j] for j in kept)))
            read = self._op(ops.PermuteOp, *read, dims=tuple(kept.index(j) for j in final))
        shape = sdg.tensors[TensorId(self.s.op_id, 0)].shape
        sdg.redefine(ops.ReshapeOp(op_id=self.s.op_id, domain=self.s.domain, shape=shape,
                                   site=self.s.site), [read])
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
        sa, sb = _shape(sdg, ea), _shape(sdg, eb)
        if not (sa.is_static() and sb.is_static()) or min(len(sa), len(sb)) < 2:
            continue
        if sa.as_static()[-1] != 1 or sb.as_static()[-2] != 1:
            continue
        sdg.redefine(ops.BinaryOp(op_id=mid, domain=m.domain, fn="mul", site=m.site),
                     [(ea.src, ea.expr), (eb.src, eb.expr)])


def contract(sdg: SDG, batched: set[int]) -> None:
    """Rewrite each `sum(mul(a, b))` whose product is one of the `batched` ops into a
    matmul, where it is a contraction of static shapes with at least
    `Tuning.min_product_elements` product elements (batched outer products first become such
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
        out = sdg.tensors[e.src].shape.try_resolve(sdg.bound_defs)
        if not out.is_static() or not dtypes.is_float(sdg.tensors[e.src].dtype):
            continue
        dims = tuple(out.as_static())
        if math.prod(dims) < TUNING.min_product_elements:
            continue
        ea, eb = sdg.in_edges[m.op_id]
        sa, sb = _shape(sdg, ea), _shape(sdg, eb)
        if not (sa.is_static() and sb.is_static()):
            continue
        rank = len(dims)
        pa = (1,) * (rank - len(sa)) + tuple(sa.as_static())
        pb = (1,) * (rank - len(sb)) + tuple(sb.as_static())
        pre = _reduce_first(sdg, s, m, pa, pb)
        if pre is not None:
            m, pa, pb, dims = pre
            if all(dims[j] == 1 for j in s.dims):  # nothing left to contract
                _drop_unit_sum(sdg, s, m)
                continue
        lay = _layout(pa, pb, s.dims)
        if lay is None or not lay.summed:
            continue
        swapped = _layout(pb, pa, s.dims)
        if swapped is not None and _transposes(swapped, pb, pa, dims) < _transposes(
                lay, pa, pb, dims):  # `a * b` is `b * a`: the order with fewer copies
            ea, eb = sdg.in_edges[m.op_id]
            sdg.redefine(m, [(eb.src, eb.expr), (ea.src, ea.expr)])
            lay, pa, pb = swapped, pb, pa
        _Contraction(sdg, s, m).rewrite(lay, pa, dims)


def _transposes(lay: _Layout, pa: tuple[int, ...], pb: tuple[int, ...],
                out: tuple[int, ...]) -> int:
    """How many of the matmul form's layout changes really move elements (a permute that
    only moves size-1 dims is a reshape): the factors' and the result's."""
    def moves(order: list[int], shape: tuple[int, ...]) -> int:
        big = [j for j in order if shape[j] != 1]
        return int(big != sorted(big))

    order = lay.both + lay.own_a + lay.summed + lay.own_b
    return moves(order, pa) + moves(order, pb) + moves(lay.both + lay.own_a + lay.own_b, out)


def _drop_unit_sum(sdg: SDG, s: ops.SumOp, prod: ops.Op) -> None:
    """A sum over size-1 dims only is a reshape of its input (one term per sum), a view
    instead of a kernel that copies."""
    out = sdg.tensors[TensorId(s.op_id, 0)]
    if sdg.tensors[TensorId(prod.op_id, 0)].dtype == out.dtype:
        sdg.redefine(ops.ReshapeOp(op_id=s.op_id, domain=s.domain, site=s.site,
                                   shape=out.shape), [(TensorId(prod.op_id, 0),
                                                       s.domain.basis_expr)])


def _shape(sdg: SDG, e: Edge) -> Shape:
    """The shape read `e` delivers, its bounds' values substituted (a window `x[0:T]` of a
    program compiled for T = 64 is 64 long: static for this rewrite)."""
    return sdg.read_shape(e).try_resolve(sdg.bound_defs)


def _read_of(sdg: SDG, op_id: int, reader: ops.Op) -> tuple[TensorId, IndexSequence]:
    """Op `op_id`'s output read at `reader`'s point (its domain may be a subset)."""
    names = [v.name for v in reader.domain.variables]
    return TensorId(op_id, 0), IndexSequence(tuple(
        reader.domain.variables[names.index(v.name)] for v in sdg.ops[op_id].domain.variables))


def _reduce_first(sdg: SDG, s: ops.SumOp, m: ops.Op, pa: tuple[int, ...],
                  pb: tuple[int, ...]) -> tuple[ops.Op, tuple[int, ...], tuple[int, ...],
                                                tuple[int, ...]] | None:
    """`sum_k(a * b)` along a dim `k` where `b` has size 1 is `sum_k(a) * b`: each factor is
    summed first along the summed dims the other broadcasts (kept as size 1), so the
    product never materialises them. A Linear layer on an expanded scalar (`s.expand(n) @
    W`, broadcast-eliminated to `W * s` summed over `n`) batched over 64x64 points built a
    64x64x48 product per step (a quarter of the PPO-shaped program's kernel time with a
    symbolic batch dim); the sums of the loop-invariant factor are one small kernel.
    The sum's rewritten reads; None when no factor has such dims."""
    own = [tuple(j for j in s.dims if x[j] > 1 and y[j] == 1) for x, y in ((pa, pb), (pb, pa))]
    size = math.prod(max(x, y) for x, y in zip(pa, pb))
    if not any(own) or any(e.cond is not None for e in sdg.in_edges[m.op_id]) or any(
            dims and math.prod(x) >= size for x, dims in zip((pa, pb), own)):
        return None  # (summing a factor as large as the product first saves nothing)
    rank = len(pa)
    reads: list[tuple[TensorId, IndexSequence]] = []
    for e, dims in zip(sdg.in_edges[m.op_id], own):
        if not dims:
            reads.append((e.src, e.expr))
            continue
        off = rank - len(sdg.read_shape(e))
        red = ops.SumOp(op_id=sdg.new_id(), domain=m.domain, site=s.site,
                        dims=tuple(j - off for j in dims), keepdim=True)
        sdg.add_inferred(red, [(e.src, e.expr)])
        reduce_op(sdg, red)  # a loop-invariant factor (a weight) is summed once, not per step
        reads.append(_read_of(sdg, red.op_id, m))
    prod = ops.BinaryOp(op_id=sdg.new_id(), domain=m.domain, site=m.site, fn="mul")
    sdg.add_inferred(prod, reads)
    sdg.redefine(s, [(TensorId(prod.op_id, 0), s.domain.basis_expr)])
    sdg.remove_op(m.op_id)
    pa, pb = (tuple(1 if j in dims else d for j, d in enumerate(x))
              for x, dims in zip((pa, pb), own))
    return prod, pa, pb, tuple(max(x, y) for x, y in zip(pa, pb))
