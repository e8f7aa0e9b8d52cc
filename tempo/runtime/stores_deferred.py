"""A block store that copies its points into the block when they are first read.

A learner that writes T points one step at a time and reads them back as one slice after
the loop (PPO's rollout read by the learner) pays a view and a copy per write with the
eager `BlockStore`: two backend calls per point. Here a write keeps the value; the first
read of a block settles its pending points, a contiguous run with one stack and one
copy. A point freed before any read is never copied; a point read where it was written
is the value itself. Blocks are still allocated at their first write, so the memory
staircase and the accountant see the same buffers — but the pending values live until
they are settled, which a tracked run would not see: tracked runs use the eager store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tempo.runtime.stores import BlockStore, Layout


class DeferredBlockStore(BlockStore):
    """`BlockStore` whose writes are copied into the block at the block's first read."""

    def __init__(self, layout: Layout, block: int,
                 stack: Callable[[list[Any], int], Any]) -> None:
        super().__init__(layout, block)
        self.stack = stack
        self.pending: dict[tuple, dict[int, Any]] = {}  # block key -> slot -> value

    def write(self, pre: tuple, i: int, value: Any) -> None:
        b, j = divmod(i, self.block)
        bkey = (pre, b)
        pend = self.pending.get(bkey)
        if pend is None:
            if bkey not in self.bufs:
                self._open(bkey)
            pend = self.pending[bkey] = {}
        pend[j] = value
        self.filled[bkey].add(j)

    def _settle(self, bkey: tuple) -> None:
        """Copy the block's pending points in: a run of consecutive slots in one go."""
        pend = self.pending.pop(bkey, None)
        if not pend:
            return
        lay, buf = self.lay, self.bufs[bkey]
        js = list(pend)
        j0, n = js[0], len(js)
        if n > 1 and js == list(range(j0, j0 + n)):
            lay.put(buf[lay.lead + (slice(j0, j0 + n),)],
                    self.stack(list(pend.values()), lay.axis))
            return
        slots = self.slots[bkey]
        for j, v in pend.items():
            view = slots[j]
            lay.put(self._view(bkey, slots, j) if view is None else view, v)

    def __getitem__(self, key: tuple) -> Any:
        pre, i = self.lay.split(key)
        b, j = divmod(i, self.block)
        pend = self.pending.get((pre, b))
        if pend is not None and j in pend:
            return pend[j]
        return super().__getitem__(key)

    def read_slice(self, pre: tuple, lo: int, hi: int) -> Any:
        for b in range(lo // self.block, (max(hi, lo + 1) - 1) // self.block + 1):
            self._settle((pre, b))
        return super().read_slice(pre, lo, hi)

    def read_blocks(self, pre: tuple, lo: int, hi: int) -> list[tuple[Any, int, int]]:
        for b in range(lo // self.block, (hi - 1) // self.block + 1):
            self._settle((pre, b))
        return super().read_blocks(pre, lo, hi)

    def pop(self, key: tuple, default: Any = None) -> Any:
        pre, i = self.lay.split(key)
        b, j = divmod(i, self.block)
        pend = self.pending.get((pre, b))
        if pend is not None:
            pend.pop(j, None)
        out = super().pop(key, default)
        if (pre, b) not in self.bufs:  # the block was released
            self.pending.pop((pre, b), None)
        return out

    def pop_range(self, pre: tuple, lo: int, hi: int) -> None:
        super().pop_range(pre, lo, hi)
        U = self.block
        for b in range(lo // U, (hi - 1) // U + 1) if hi > lo else ():
            pend = self.pending.get((pre, b))
            if pend is None:
                continue
            if (pre, b) not in self.bufs:  # released with its last point
                del self.pending[(pre, b)]
                continue
            for j in range(max(lo, b * U) - b * U, min(hi, (b + 1) * U) - b * U):
                pend.pop(j, None)

    def clear(self) -> None:
        self.pending.clear()
        super().clear()


def stack_along(backend: str) -> Callable[[list[Any], int], Any]:
    """`stack(values, axis)` of a backend whose stores are written in place."""
    if backend == "torch":
        import torch

        return lambda xs, a: torch.stack(xs, a)
    import numpy as np

    return lambda xs, a: np.stack(xs, a)
