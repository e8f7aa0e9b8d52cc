"""Which store each tensor gets (ARCHITECTURE §5.7), decided once the schedule and the
bounds are known, because whether a window store is safe depends on where the readers
run: a tensor read only through trailing windows `x[t-W+1:t+1]` (or points within W-1 of
`t`), by readers in the same `t` loop as its producer, needs only its last W points — a
window store, chosen whenever it holds fewer points than the block store would:

* a ring of exactly W slots (runtime/stores_ring.py) when every read along the window's
  dim is a point or a tiled read (blocks, §5.4);
* the compacting store of W + W/4 points (`CircularStore`) when some reader takes the
  window as one in-order slice (a ring would have to join its two runs at every step).

Other slice-read tensors get a block store (blocks of U points); the rest keep point
stores (codegen makes values consumed where they are made locals). `force` (the config's
`enable_point_store_fallback=False`) gives every tensor that can legally have a window
store one, whether or not it saves memory — point-read tensors (`x[t-1]`) included — so
the program tests exercise them on small programs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tempo.core.configs import TUNING
from tempo.core.index_expr import Slice, Symbol
from tempo.core.ops import SinkUDFOp, TiledAttentionOp, TiledReduceOp
from tempo.core.sdg import SDG, TensorId
from tempo.schedule.tree import Exec, If, Loop, Node, Seq, While

MAX_SCAN = 1 << 14  # bounds above this are not scanned point by point for window widths


@dataclass(frozen=True)
class StoreKind:
    """`kind` is "block" (size = points per block), "ring" (size = slots, the window) or
    "circular" (size = window, 2W points kept); `extent` is the number of points along
    `dim`; `rotated` (rings): a read of the whole ring may arrive in slot order;
    `prefix` (blocks): every read along `dim` is a growing prefix `x[0:e]`, so no block is
    freed before the last read of its prefix and the blocks may lie end to end in one
    buffer (runtime/stores_joined.py)."""

    kind: str
    dim: int
    size: int
    extent: int = 0
    rotated: bool = False
    prefix: bool = False


def loops_of(tree: Node) -> dict[int, list[Loop]]:
    """Each executed op's enclosing loops, outermost first."""
    out: dict[int, list[Loop]] = {}

    def walk(n: Node, path: list[Loop]) -> None:
        if isinstance(n, Seq):
            for c in n.children:
                walk(c, path)
        elif isinstance(n, Loop):
            walk(n.body, [*path, n])
        elif isinstance(n, While):
            walk(n.body, path)
        elif isinstance(n, If):
            walk(n.then, path)
            if n.else_ is not None:
                walk(n.else_, path)
        elif isinstance(n, Exec):
            out.setdefault(n.op_id, list(path))

    walk(tree, [])
    return out


def choose(sdg: SDG, tree: Node, bounds: dict, block: int, circular: bool,
           block_bytes: int | None = None, force: bool = False) -> dict[TensorId, StoreKind]:
    """The store of every tensor the storage pass marked as slice-read (`sdg.block_stores`).
    `bounds` maps bound symbols to values; `block` is U; `circular` allows window stores;
    `block_bytes` (under a device cap with swapping: blocks are the unit that moves to
    the host) shrinks U for tensors whose blocks of U points would be larger, unless a
    tiled op reads them in blocks of U; `force`: window stores wherever legal."""
    loops = loops_of(tree)
    tiled = _tiled(sdg)
    out = {}
    for tid, dim in sdg.block_stores.items():
        size = _size(sdg, tid, dim, bounds)
        u = block_rows(sdg, tid, dim, block, bounds)
        w = _window(sdg, tid, dim, size, bounds, loops) if circular else None
        if w is not None:
            kind = _window_store(sdg, tid, dim, w, size, u, force)
            if kind is not None:
                out[tid] = kind
                continue
        info = sdg.tensors[tid]
        if block_bytes is not None and tid not in tiled and info.shape.is_static():
            point = int(info.shape.as_static().prod()) * info.dtype.repr_bytes
            u = max(1, min(u, block_bytes // max(point, 1)))
        out[tid] = StoreKind("block", dim, u, size, prefix=size > u and all(
            isinstance(m := e.expr[dim], Slice) and m.is_growing_slice()
            for e in sdg.readers(tid)))
    if circular and force:
        out.update(_forced_windows(sdg, bounds, loops, set(out)))
    if circular:
        _pair_tiled(sdg, out, block)
    return out


def block_rows(sdg: SDG, tid: TensorId, dim: int, block: int, bounds: dict) -> int:
    """The rows of a block of `tid` along domain position `dim`: U, or the dim's extent when
    that is smaller. A block store and the block reader of a point store (`PointBlocks`)
    cut alike, so a tiled op pairing keys from one with values from the other sees blocks
    of one length (a point-stored key of 256-row blocks beside a 10-point value block
    store broke the numpy/jax step's row mask, accept6 c08 with dead-code elim off)."""
    return max(1, min(block, _size(sdg, tid, dim, bounds)))


def _window_store(sdg: SDG, tid: TensorId, dim: int, w: int, size: int, u: int,
                  force: bool) -> StoreKind | None:
    """A ring of W slots, or the compacting store of W + slack points when a reader takes the
    window as one slice, if it holds fewer points than a block store of U would (or
    `force`); None: the block store."""
    if any(isinstance(e.expr[dim], Slice) and e.sink_in not in _blocked(sdg.ops[e.sink])
           for e in sdg.readers(tid)):
        kind = StoreKind("circular", dim, w, size)
        held = w + compaction_slack(w)
    else:
        kind = StoreKind("ring", dim, min(w, size), size)
        held = min(w, size)
    # the most blocks W consecutive points can touch, each of U points
    blocks = min(-(-size // u), -(-(u - 1 + w) // u))
    return kind if force or held < blocks * u else None


def compaction_slack(w: int) -> int:
    """Slots beyond W in a compacting window store: W / TUNING.compaction_slack_share,
    rounded up (its docstring says why)."""
    return max(1, -(-w // TUNING.compaction_slack_share))


def _blocked(op: object) -> tuple[int, ...]:
    return tuple(getattr(op, "block_inputs", ()))


def _order_free(op: object) -> bool:
    """A tiled reader whose result does not depend on the order of the points it reads
    (so a ring may hand it its slots in slot order)."""
    if isinstance(op, TiledAttentionOp):
        return not op.mask
    return isinstance(op, TiledReduceOp) and op.kind == "sum"


def _pair_tiled(sdg: SDG, out: dict[TensorId, StoreKind], block: int) -> None:
    """A tiled op pairs the blocks of its inputs row for row (keys with values), so all
    tensors read together in blocks must have stores that cut a range alike: rings of one
    size (rotated only if every slice reader of every one of them is order-free), else
    blocks of U for all (the compacting store cuts like itself only)."""
    parent: dict[TensorId, TensorId] = {}

    def root(t: TensorId) -> TensorId:
        while parent.setdefault(t, t) != t:
            t = parent[t]
        return t

    for op in sdg.ops.values():
        srcs = [e.src for e in sdg.in_edges[op.op_id] if e.sink_in in _blocked(op)]
        for a in srcs[1:]:
            parent[root(a)] = root(srcs[0])
        for a in srcs[:1]:
            root(a)
    groups: dict[TensorId, list[TensorId]] = {}
    for t in parent:
        groups.setdefault(root(t), []).append(t)
    for members in groups.values():
        kinds = [out.get(t) for t in members]
        first = kinds[0]
        same = first is not None and all(
            k is not None and (k.kind, k.size) == (first.kind, first.size) for k in kinds)
        if not same:
            for t, k in zip(members, kinds):
                if k is not None and k.kind != "block":
                    out[t] = StoreKind("block", k.dim, max(1, min(block, k.extent)), k.extent)
            continue
        assert first is not None
        if first.kind == "ring" and all(
                _order_free(sdg.ops[e.sink]) for t, k in zip(members, kinds) for e in
                sdg.readers(t) if k is not None and isinstance(e.expr[k.dim], Slice)):
            for t, k in zip(members, kinds):
                assert k is not None
                out[t] = StoreKind("ring", k.dim, k.size, k.extent, rotated=True)


def _tiled(sdg: SDG) -> set[TensorId]:
    """Tensors a tiled op reads in blocks of its own size (the store's blocks must match)."""
    return {e.src for op in sdg.ops.values() for e in sdg.in_edges[op.op_id]
            if e.sink_in in getattr(op, "block_inputs", ())}


def _size(sdg: SDG, tid: TensorId, dim: int, bounds: dict) -> int:
    op = sdg.ops[tid.op_id]
    return int(op.domain.bound_of(op.domain.variables[dim]).evaluate(bounds))


def _forced_windows(sdg: SDG, bounds: dict, loops: dict[int, list[Loop]],
                    taken: set[TensorId]) -> dict[TensorId, StoreKind]:
    """Rings for the point-read tensors that can have one (`force`): every read along the
    window's dim stays within its newest W points, and reads name the reader's own point
    along every other dim (so each window is the reader's prefix's)."""
    out = {}
    for tid, info in sdg.tensors.items():
        op = sdg.ops[tid.op_id]
        if tid in taken or not info.shape.is_static() or isinstance(op, SinkUDFOp):
            continue
        for dim in range(len(op.domain.variables)):
            if not _same_prefix(sdg, tid, dim):
                continue
            size = _size(sdg, tid, dim, bounds)
            w = _window(sdg, tid, dim, size, bounds, loops)
            if w is not None:
                out[tid] = StoreKind("ring", dim, min(w, size), size)
                break
    return out


def _same_prefix(sdg: SDG, tid: TensorId, dim: int) -> bool:
    variables = sdg.ops[tid.op_id].domain.variables
    for e in sdg.readers(tid):
        for k, (v, m) in enumerate(zip(variables, e.expr)):
            if k != dim and not (isinstance(m, Symbol) and m.name == v.name):
                return False
    return True


def _window(sdg: SDG, tid: TensorId, dim: int, size: int, bounds: dict,
            loops: dict[int, list[Loop]]) -> int | None:
    """W if every read of `tid` along `dim` stays within the W newest points written by a
    forward loop that also runs all the readers; None otherwise."""
    if tid in sdg.keep or size > MAX_SCAN:
        return None
    op = sdg.ops[tid.op_id]
    var = op.domain.variables[dim]
    home = _loop_over(loops.get(tid.op_id, []), var.name)
    if home is None or home.step != 1:
        return None
    width = 1
    for e in sdg.readers(tid):
        sink = sdg.ops[e.sink]
        if var.name not in {v.name for v in sink.domain.variables}:
            return None
        if _loop_over(loops.get(e.sink, []), var.name) is not home:
            return None
        m = e.expr[dim]
        if not m.vars_used() <= {var}:
            return None
        for t, lo, hi in _ranges(m, var, size, bounds):
            if hi <= lo:
                continue
            if hi - 1 > t:  # reads ahead of the producer
                return None
            width = max(width, t - lo + 1)
    return width


def _loop_over(path: list[Loop], name: str) -> Loop | None:
    return next((lp for lp in path if lp.counter == name), None)


def _ranges(m: object, var: object, size: int, bounds: dict
            ) -> Iterator[tuple[int, int, int]]:
    """(t, lo, hi) of the points `m` reads at each t of the loop."""
    for t in range(size):
        vals = {**bounds, var: t}
        if isinstance(m, Slice):
            s = m.evaluate(vals)
            yield t, s.start, s.stop
        else:
            p = int(m.evaluate(vals))  # type: ignore[attr-defined]  # an int index expr
            yield t, p, p + 1

