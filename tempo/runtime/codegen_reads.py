"""What the generated code calls to read ranges of point stores (gathered point by point,
or a jax block store's blocks) and to bring them back to the device ahead of a read,
and which point stores tiled ops read in blocks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tempo.core.index_expr import Slice
from tempo.core.sdg import SDG, TensorId
from tempo.runtime.stores_stacked import StackedStore


def read_slices(store: dict, parts: tuple, stack: Callable,
                empty: Callable[[tuple[int, ...]], Any] | None = None) -> Any:
    """Gather points of `store`: `parts` holds ints and (lo, hi) ranges; ranges are stacked
    as leading dims in order. A jax block store (a compiled loop's stacked output) returns
    the blocks that cover the range as they are. An empty range (`x[t + 1:T]` at
    t = T - 1, `x[0:t]` at t = 0) has no point to stack: `empty(lengths)` makes the
    (lengths, *point shape) array of no elements (None: the tensor's point shape is not
    static, and stacking nothing fails as before)."""
    if isinstance(store, StackedStore):
        got = store.read_range(parts, stack)
        if got is not None:
            return got
    return _read_points(store, parts, stack, empty)


def _read_points(store: dict, parts: tuple, stack: Callable,
                 empty: Callable[[tuple[int, ...]], Any] | None = None) -> Any:
    for k, p in enumerate(parts):
        if isinstance(p, tuple):
            lo, hi = p
            head, rest = parts[:k], parts[k + 1 :]
            if hi <= lo and empty is not None:
                return empty(tuple(max(q[1] - q[0], 0) for q in parts[k:]
                                   if isinstance(q, tuple)))
            return stack([_read_points(store, head + (i,) + rest, stack, empty)
                          for i in range(lo, hi)])
    return store[parts]


def fetch_slices(store: Any, parts: tuple, ahead: bool) -> None:
    """Bring the points of `store` a read of `parts` (ints and (lo, hi) ranges) covers back
    to the device ahead of the read; points not stored (yet, or outside the bounds) are
    skipped."""
    for k, p in enumerate(parts):
        if isinstance(p, tuple):
            head, rest = parts[:k], parts[k + 1:]
            for i in range(p[0], p[1]):
                fetch_slices(store, head + (i,) + rest, ahead)
            return
    store.fetch(parts, ahead)


def tiled_point_reads(sdg: SDG, blocked: dict[TensorId, int]
                      ) -> list[tuple[TensorId, int, int]]:
    """(tensor, sliced domain position, block size) of each point-stored tensor that a
    tiled op (`block_inputs`) reads in blocks."""
    out = {}
    for op in sdg.ops.values():
        for e in sdg.in_edges[op.op_id]:
            if e.sink_in in getattr(op, "block_inputs", ()) and e.src not in blocked:
                d = next(k for k, m in enumerate(e.expr) if isinstance(m, Slice))
                out[e.src] = (e.src, d, op.block)  # type: ignore[attr-defined]  # tiled op
    return list(out.values())
