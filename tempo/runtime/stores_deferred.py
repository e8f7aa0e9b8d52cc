"""A block store that copies its points into the blocks when they are first read.

A learner that writes T points one step at a time and reads them back as one slice after
the loop (PPO's rollout read by the learner) pays a view and a copy per write with the
eager `BlockStore`: two backend calls per point. Here a write only keeps the value, in
`pending[prefix][i]` — the generated code assigns it there itself (two C-level subscripts,
no Python call). The first read of a block settles its pending points: a run of
consecutive points (in either order) with one stack and one copy. A point freed before
any read is never copied; a point read where it was written is the value itself. Blocks
are allocated when they are settled, so the pending values live outside the accountant:
tracked runs use the eager store.

Contract with the generated code: `pending` and each prefix's dict `pending[pre]` are
never replaced or removed, only emptied in place (settles, frees and `clear()` included).
The generated code binds `pending` once and looks `pending[pre]` up once before a loop
over the stored dim, then writes `d[i] = value` through that dict for the whole loop
(tests/runtime/test_stores_deferred.py holds the store to this).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from tempo.runtime.stores import BlockStore, Layout


class DeferredBlockStore(BlockStore):
    """`BlockStore` whose writes are copied into the blocks at the blocks' first read."""

    def __init__(self, layout: Layout, block: int,
                 stack: Callable[[list[Any], int], Any]) -> None:
        super().__init__(layout, block)
        self.stack = stack
        # prefix -> point along the stored dim -> value not yet copied into its block
        # (never replaced, nor any prefix's dict: see the module's contract)
        self.pending: defaultdict[tuple, dict[int, Any]] = defaultdict(dict)

    def write(self, pre: tuple, i: int, value: Any) -> None:
        self.pending[pre][i] = value

    def _settle(self, pre: tuple, lo: int, hi: int) -> None:
        """Copy the pending points of the blocks that range lo..hi-1 touches into them."""
        pend = self.pending.get(pre)
        if not pend:
            return
        U = self.block
        first, last = lo // U * U, ((max(hi, lo + 1) - 1) // U + 1) * U
        keys = sorted(pend)
        if keys[0] < first or keys[-1] >= last:
            keys = [i for i in keys if first <= i < last]
        start = 0
        while start < len(keys):  # one sorted run per block
            b = keys[start] // U
            end = bisect_left(keys, (b + 1) * U, start)
            self._settle_block(pre, b, keys[start:end], pend)
            start = end

    def _settle_block(self, pre: tuple, b: int, points: list[int],
                      pend: dict[int, Any]) -> None:
        bkey, U = (pre, b), self.block
        lay, values = self.lay, list(map(pend.pop, points))
        j0, n = points[0] - b * U, len(points)
        slots = self.slots.get(bkey)
        if slots is None and n == U and points[-1] - points[0] == U - 1:
            # the whole block at once (a rollout read back by its learner): stacked along
            # the buffer's stored axis it is the block itself, one copy instead of a
            # stack and a copy into a strided view (60 -> 39 us at 64 x (64, 1, 64))
            self._alloc(bkey, U, self.stack(values, lay.axis))
            self.filled[bkey].update(range(U))
            return
        if slots is None:
            slots = self._open(bkey)
        js = range(j0, j0 + n) if points[-1] - points[0] == n - 1 else [i - b * U for i in points]
        self.filled[bkey].update(js)
        if n > 1 and isinstance(js, range):  # consecutive: one stack, one copy
            lay.put(self.fronts[bkey][j0: j0 + n], self.stack(values, 0))
            return
        front = self.fronts[bkey]
        for j, v in zip(js, values):
            lay.put_at(front, j, v)

    def __getitem__(self, key: tuple) -> Any:
        d = self.dim  # (Layout.split inlined: reads of pending points are hot)
        pend = self.pending.get(key[:d] + key[d + 1:])
        if pend:
            v = pend.get(key[d])
            if v is not None:
                return v
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, tuple):
            pre, i = self.lay.split(key)
            pend = self.pending.get(pre)
            if pend and i in pend:
                return True
        return super().__contains__(key)

    def read_slice(self, pre: tuple, lo: int, hi: int) -> Any:
        self._settle(pre, lo, hi)
        return super().read_slice(pre, lo, hi)

    def read_blocks(self, pre: tuple, lo: int, hi: int) -> list[tuple[Any, int, int]]:
        if hi > lo:
            self._settle(pre, lo, hi)
        return super().read_blocks(pre, lo, hi)

    def pop(self, key: tuple, default: Any = None) -> Any:
        pre, i = self.lay.split(key)
        pend = self.pending.get(pre)
        if pend and pend.pop(i, None) is not None:
            return None
        return super().pop(key, default)

    def pop_range(self, pre: tuple, lo: int, hi: int) -> None:
        pend = self.pending.get(pre)
        if pend:
            if hi - lo > len(pend):
                for i in [i for i in pend if lo <= i < hi]:
                    del pend[i]
            else:
                for i in range(lo, hi):
                    pend.pop(i, None)
        super().pop_range(pre, lo, hi)

    def clear(self) -> None:
        for pend in self.pending.values():  # in place: the generated code may hold them
            pend.clear()
        super().clear()

    def values(self) -> Iterator[Any]:
        """The blocks and the values not yet copied into them (both hold memory)."""
        yield from super().values()
        for pend in self.pending.values():
            yield from pend.values()

    def __len__(self) -> int:
        return super().__len__() + sum(len(p) for p in self.pending.values())


def stack_along(backend: str) -> Callable[[list[Any], int], Any]:
    """`stack(values, axis)` of a backend whose stores are written in place."""
    if backend == "torch":
        import torch

        return lambda xs, a: torch.stack(xs, a)
    import numpy as np

    return lambda xs, a: np.stack(xs, a)
