"""Tiled (statified) reads of point stores: a read `x[lo:hi]` along one domain dim as a
list of static blocks `(block, start, stop)` of U points each, for backends without
block stores (jax: immutable arrays) or tensors the storage pass left in point stores.

A block is assembled in a host buffer as the reads reach its points (rows outside the
ranges read stay zero: the kernel masks them); each point is copied once, as points of a
run are written once. Until every row is in, each read moves the buffer to the device
(O(U) per step, not the whole history); a complete block is moved once and kept until
`clear()`. Blocks wholly before a read's start are dropped (reads move forward: windows).

Off the CPU (a GPU, or "fake-gpu") the host buffer would cost a device-to-host copy of
each point and a host-to-device copy of the block at each read: there a block is
assembled on the device instead, by stacking its points (a zero row for each missing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tempo.core.sdg import TensorId
from tempo.runtime.stores import MemoryAccountant, Storage


class PointBlocks:
    """Block reads of one point store along domain position `dim`, blocks of `block`.
    A block is assembled in a host buffer as its points appear (each copied once) and
    moved to the device at each read until it is complete; a complete block's device
    array is kept."""

    def __init__(self, store: Any, dim: int, block: int, to_numpy: Callable[[Any], Any],
                 from_numpy: Callable[[Any], Any], tid: TensorId,
                 acct: MemoryAccountant | None, storage: Storage,
                 stack: Callable[[list[Any]], Any] | None = None) -> None:
        self.stack = stack  # given: assemble blocks on the device (see the module)
        self.rows: dict[tuple[tuple, int], list[Any]] = {}  # device assembly's points
        self.zeros: Any = None  # the device assembly's row for points not read yet
        self.store = store
        self.dim = dim
        self.block = block
        self.to_numpy = to_numpy
        self.from_numpy = from_numpy
        self.tid = tid
        self.acct = acct  # charged for the complete blocks it keeps (when tracking)
        self.storage = storage
        self.full: dict[tuple, dict[int, Any]] = {}  # prefix -> block number -> device
        self.partial: dict[tuple[tuple, int], tuple[np.ndarray, np.ndarray]] = {}

    def _key(self, pre: tuple, i: int) -> tuple:
        d = self.dim
        return pre[:d] + (i,) + pre[d:]

    def _block(self, pre: tuple, b: int, s: int, e: int) -> Any:
        """Block `b` of prefix `pre`, rows s..e-1 filled from the store."""
        kept = self.full.setdefault(pre, {})
        got = kept.get(b)
        if got is not None:
            return got
        if self.stack is not None:
            return self._device_block(self.stack, pre, b, s, e)
        store, U, base = self.store, self.block, b * self.block
        part = self.partial.get((pre, b))
        if part is None:
            first = self.to_numpy(store[self._key(pre, base + s)])
            part = (np.zeros((U, *first.shape), first.dtype), np.zeros(U, bool))
            self.partial[(pre, b)] = part
        buf, have = part
        for j in np.flatnonzero(~have[s:e]) + s:
            buf[j] = self.to_numpy(store[self._key(pre, base + int(j))])
            have[j] = True
        blk = self.from_numpy(buf)
        if have.all():
            del self.partial[(pre, b)]
            self._keep(pre, b, blk)
        return blk

    def _device_block(self, stack: Callable[[list[Any]], Any], pre: tuple, b: int, s: int,
                      e: int) -> Any:
        """`_block` assembled on the device: the points themselves, stacked."""
        base = b * self.block
        rows = self.rows.setdefault((pre, b), [None] * self.block)
        for j in range(s, e):
            if rows[j] is None:
                rows[j] = self.store[self._key(pre, base + j)]
        if self.zeros is None:
            first = rows[s]
            self.zeros = self.from_numpy(np.zeros(tuple(first.shape)))  # in the tensor's dtype
        blk = stack([self.zeros if r is None else r for r in rows])
        if all(r is not None for r in rows):
            del self.rows[(pre, b)]
            self._keep(pre, b, blk)
        return blk

    def _keep(self, pre: tuple, b: int, blk: Any) -> None:
        self.full.setdefault(pre, {})[b] = blk
        if self.acct is not None:
            self.acct.hold(self.tid, *self.storage(blk))

    def read_blocks(self, pre: tuple, lo: int, hi: int) -> list[tuple[Any, int, int]]:
        U = self.block
        if hi <= lo:
            return []
        first = lo // U
        kept = self.full.get(pre)
        if kept:
            for old in [b for b in kept if b < first]:
                self._drop(kept.pop(old))
        out = []
        for b in range(first, (hi - 1) // U + 1):
            s, e = max(lo, b * U) - b * U, min(hi, (b + 1) * U) - b * U
            out.append((self._block(pre, b, s, e), s, e))
        return out

    def _drop(self, blk: Any) -> None:
        if self.acct is not None:
            self.acct.drop(self.storage(blk)[0])

    def clear(self) -> None:
        for kept in self.full.values():
            for blk in kept.values():
                self._drop(blk)
        self.full.clear()
        self.partial.clear()
        self.rows.clear()
