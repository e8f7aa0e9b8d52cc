"""Running accumulation of sums over a temporal dim (ARCHITECTURE §5.5, incrementalisation
in time): `g = Σ_{t<T} f(t)`, a sum over a slice `f[0:T]`, becomes the recurrence
`acc[0] = f(0); acc[t] = acc[t-1] + f(t)` read at `acc[T-1]`.

Why: autodiff writes the gradient of a loss summed over time as such sums (a weight's
gradient is the sum of its per-step contributions), and as a sum it needs every `f(t)` at
once, so every step's activations stay alive until the end of the loop. As a running sum,
`f(t)` can be computed as soon as its reads exist and step t's activations freed right
after. When `f(t)` reads at most `n` steps ahead (`x[t:t+n]`, an n-step TD target) the
scheduler places it `n` steps later in the same loop (`loop_tree`, shifted placement):
O(n) steps live instead of O(T). When it reads to the end (`x[t:T]`, a Monte-Carlo return)
or depends on something computed from the whole loop (a mean over the episode), nothing is
gained and the sum is left to vectorisation, which batches it — unless the batched learner
cannot run under the device cap even with swapping (one of its batched ops needs more
than the cap at once: `_Reach.batched_bytes`); then, with swap on, it is accumulated in a
loop of its own after the rollout, which the swap streams step by step. A batched learner
that fits stays batched (Monte-Carlo REINFORCE then climbs to the cap and swaps).

The accumulated ops are tagged `loop:<dim>`: vectorisation leaves them in their loop.
Float sums add in another order than one batched sum (equal to rounding, not bit for bit).
"""

from __future__ import annotations

from dataclasses import replace

from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.index_expr import IndexExpr, IndexSequence, Slice, Symbol
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.schedule.loop_tree import strongly_connected

LOOP_TAG = "loop:"


def keeps_loop(op: ops.Op, d: Symbol) -> bool:
    """Whether the accumulation pass placed `op` in the loop over `d` (not to be batched)."""
    return LOOP_TAG + d.name in op.tags


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    for d in sdg.universe.variables:
        size = sdg.bound_defs.get(d.as_bound())
        if d in sdg.loop_dims or not isinstance(size, int) or isinstance(size, bool) \
                or size < 2:
            continue
        cap = cfg.device_memory_cap_bytes if cfg.enable_swap else None
        finder = _Reach(sdg, d, size, cap)
        for op in list(sdg.ops.values()):
            if isinstance(op, ops.SumOp) and op.op_id in sdg.ops:
                site = _summed_read(sdg, op, d, size)
                if site is not None and finder.worth(site.src.op_id):
                    _accumulate(sdg, op, site, d, finder.cone(site.src.op_id))
    return sdg


def _summed_read(sdg: SDG, op: ops.SumOp, d: Symbol, size: int) -> Edge | None:
    """The read `x[.., 0:D, ..]` of a float sum over that slice's axis, every other member
    the sum's own point: the sums this pass can accumulate along `d`."""
    es = sdg.in_edges[op.op_id]
    if len(es) != 1 or es[0].cond is not None or op.keepdim or 0 not in op.dims:
        return None
    e = es[0]
    src = sdg.ops[e.src.op_id]
    if d in op.domain or d not in src.domain or sdg.is_kept(op.op_id):
        return None
    if not dtypes.is_float(sdg.tensors[e.src].dtype) or e.expr.num_slices() != 1:
        return None
    pos = src.domain.find_variable_index(d)
    if {v.name for v in src.domain.variables} - {d.name} != \
            {v.name for v in op.domain.variables}:
        return None
    for k, (v, m) in enumerate(zip(src.domain.variables, e.expr)):
        if k != pos and not (isinstance(m, Symbol) and m.name == v.name):
            return None
    m = e.expr[pos]
    if not isinstance(m, Slice):
        return None
    lo, hi = _value(m.start, sdg), _value(m.stop, sdg)
    return e if lo == 0 and hi == size else None


def _value(x: object, sdg: SDG) -> int | None:
    v = x.try_eval(sdg.bound_defs) if isinstance(x, IndexExpr) else x
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class _Reach:
    """How far ahead along `d` an op's value reads (through every op over `d` it depends
    on), and whether what it reads without `d` is computed before the loop over `d`."""

    def __init__(self, sdg: SDG, d: Symbol, size: int, cap: int | None) -> None:
        self.sdg, self.d, self.size, self.cap = sdg, d, size, cap
        self._pre: dict[int, bool] = {}
        self._reach: dict[int, int | None] | None = None
        self._cyclic: set[int] = set()  # ops in a recurrence over d: they stay in its loop

    def cone(self, x: int) -> set[int]:
        """Ops over `d` that `x` depends on (itself included)."""
        seen, stack = {x}, [x]
        while stack:
            for e in self.sdg.in_edges[stack.pop()]:
                s = e.src.op_id
                if s not in seen and self.d in self.sdg.ops[s].domain:
                    seen.add(s)
                    stack.append(s)
        return seen

    def worth(self, x: int) -> bool:
        """`x` can be computed inside the loop a bounded number of steps after its own
        point, and that number is small against the loop (at most half of it). Under a
        device cap with swapping on, a larger look-ahead is accumulated too when the
        batched learner could not run under the cap even with swapping: it then loops
        over `d` after the loop it reads, one step's points at a time, which the swap
        fetches back step by step."""
        ahead = self.ahead(x)
        if ahead is None:
            return False
        if 2 * (ahead + 1) <= self.size:
            return True
        return self.cap is not None and self.batched_bytes(x) > self.cap

    def batched_bytes(self, x: int) -> int:
        """What the batched learner of `x` needs on the device at once, at least: over
        the ops `x` depends on that vectorisation batches along `d` (those outside a
        recurrence over `d`), the most one of them reads and writes for all points of
        `d` together. Swapping cannot bring a batched op below that: its operands and
        result are on the device during its call."""
        if self._reach is None:
            self._reach = self._reach_all()
        most = 0
        for o in self.cone(x) - self._cyclic:
            need = sum(self._bytes(e.src) * (self.size if self.d in
                                             self.sdg.ops[e.src.op_id].domain else 1)
                       for e in self.sdg.in_edges[o])
            need += self.size * sum(self._bytes(TensorId(o, k))
                                    for k in range(self.sdg.ops[o].num_outputs))
            most = max(most, need)
        return most

    def _bytes(self, tid: TensorId) -> int:
        """Bytes of one point of `tid` (0 when its shape is symbolic)."""
        info = self.sdg.tensors[tid]
        if not info.shape.is_static():
            return 0
        n = info.dtype.repr_bytes
        for k in info.shape.as_static():
            n *= int(k)
        return n

    def ahead(self, x: int) -> int | None:
        """Steps along `d` beyond its own point that `x` needs (None: unbounded, or it
        needs something computed after the loop)."""
        if self._reach is None:
            self._reach = self._reach_all()
        return self._reach.get(x)

    def _reach_all(self) -> dict[int, int | None]:
        """`ahead` of every op over `d`, in one pass over the components of their reads
        in topological order (a cycle reading ahead, a backward recurrence, is unbounded;
        one reading behind, a rollout, needs what its members' other reads need)."""
        over = [o for o, op in self.sdg.ops.items() if self.d in op.domain]
        inside = set(over)
        succ: dict[int, list[int]] = {o: [] for o in over}
        for o in over:
            for e in self.sdg.in_edges[o]:
                if e.src.op_id in inside:
                    succ[e.src.op_id].append(o)
        reach: dict[int, int | None] = {}
        for scc in reversed(strongly_connected(over, succ)):  # Tarjan: sinks first
            members = set(scc)
            if len(scc) > 1 or any(e.src.op_id == scc[0] for e in self.sdg.in_edges[scc[0]]):
                self._cyclic |= members
            need: int | None = 0
            for o in scc:
                for e in self.sdg.in_edges[o]:
                    s = e.src.op_id
                    off = self._offset(e) if s in inside else 0
                    if s not in inside:
                        r: int | None = 0 if self._before_loop(e) else None
                    elif s in members:
                        r = None if off is None or off > 0 else 0
                    else:
                        src_reach = reach[s]
                        r = None if src_reach is None or off is None else src_reach + off
                    need = None if need is None or r is None else max(need, r)
            if need is not None and need >= self.size:
                need = None
            reach.update({o: need for o in scc})
        return reach

    def _offset(self, e: Edge) -> int | None:
        """The most the read's index along `d` exceeds the reader's point."""
        src = self.sdg.ops[e.src.op_id]
        m = e.expr[src.domain.find_variable_index(self.d)]
        top = m.stop - 1 if isinstance(m, Slice) else m
        if any(v.name != self.d.name for v in top.vars_used()):
            return None
        diff = (top - self.d).simplify()
        if diff.is_constant():
            return _value(diff, self.sdg)
        vals = [_value(top.remap({self.d: k}), self.sdg) for k in range(self.size)]
        if any(v is None for v in vals):
            return None
        return max(v - k for k, v in enumerate(vals) if v is not None)

    def _before_loop(self, e: Edge) -> bool:
        """A read of an op without `d`: it must not depend on the loop at the same point
        of the dims around it (the parameters of this iteration, computed from the last)."""
        src = e.src.op_id
        if self.d in self.sdg.ops[src].domain:
            return False
        if not _same_point(self.sdg, e):
            return _earlier_point(self.sdg, e)
        if src not in self._pre:
            self._pre[src] = True  # a same-point cycle has no order anyway
            self._pre[src] = all(self._before_loop(r) for r in self.sdg.in_edges[src])
        return self._pre[src]


def _same_point(sdg: SDG, e: Edge) -> bool:
    src = sdg.ops[e.src.op_id]
    return all(isinstance(m, Symbol) and m.name == v.name
               for v, m in zip(src.domain.variables, e.expr))


def _earlier_point(sdg: SDG, e: Edge) -> bool:
    """Every member the identity or `v - c` (c > 0) on a dim of the source: an earlier
    iteration of an enclosing loop."""
    src = sdg.ops[e.src.op_id]
    for v, m in zip(src.domain.variables, e.expr):
        if isinstance(m, Slice) or any(u.name != v.name for u in m.vars_used()):
            return False
        c = _value((v - m).simplify(), sdg)
        if c is None or c < 0:
            return False
    return True


def _accumulate(sdg: SDG, s: ops.SumOp, e: Edge, d: Symbol, cone: set[int]) -> None:
    """Rewrite `s` (a sum over `x[.., 0:D, ..]`) as a running sum along `d`, and tag the
    ops it reads over `d` to stay in their loop."""
    x = sdg.ops[e.src.op_id]
    dom, basis = x.domain, x.domain.basis_expr
    pos = dom.find_variable_index(d)
    tag = frozenset({LOOP_TAG + d.name})
    out = TensorId(s.op_id, 0)
    shape, dtype = sdg.tensors[out].shape, sdg.tensors[out].dtype
    f = e.src
    if s.dims != (0,):  # the per-step term sums the other axes
        per = ops.SumOp(op_id=sdg.new_id(), domain=dom, site=s.site, tags=s.tags | tag,
                        dims=tuple(k - 1 for k in s.dims if k), keepdim=False)
        f = TensorId(sdg.add_inferred(per, [(e.src, basis)]).op_id, 0)
    acc = ops.MergeOp(op_id=sdg.new_id(), domain=dom, site=s.site, tags=s.tags | tag,
                      shape=shape, dtype=dtype)
    sdg.add_op(acc, [], [shape], [dtype])
    add = ops.BinaryOp(op_id=sdg.new_id(), domain=dom, site=s.site, tags=s.tags | tag,
                       fn="add")
    prev = basis.replace_idx(pos, d - 1)
    sdg.add_inferred(add, [(TensorId(acc.op_id, 0), prev), (f, basis)])
    sdg.add_edge(Edge(acc.op_id, 0, f, basis, d.symb_eq(0), s.site))
    sdg.add_edge(Edge(acc.op_id, 1, TensorId(add.op_id, 0), basis, d > 0, s.site))
    last = IndexSequence(tuple(d.as_bound() - 1 if k == pos else v
                               for k, v in enumerate(dom.variables)))
    sdg.replace_all_uses(out, TensorId(acc.op_id, 0), via=last)
    sdg.remove_ops([s.op_id])
    for o in cone:
        op = sdg.ops[o]
        if not tag <= op.tags:
            sdg.replace_op(replace(op, tags=op.tags | tag))
