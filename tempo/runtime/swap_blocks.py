"""Swapping the blocks of a block store (ARCHITECTURE §6, §5.7): a rollout's observations
are written point by point into blocks of U points and read back by the learner as one
range, so the unit that sits idle on the device in between is a block. A block goes to
the host pool once it is complete (its last point is written, or the last point of the
stored dim) — by the schedule's offload statement (schedule/swaps.py) at its last point,
or under the device cap by the swapper, oldest complete block first — and comes back
whole at the schedule's fetch before a read, or at the read (a demand fetch). The host
copy is exact, so results are unchanged; the accountant counts the block on the host
pool while it is away.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tempo.runtime.stores import BlockStore, Layout
from tempo.runtime.swap import Offloaded, Swapper


class SwapBlockStore(BlockStore):
    """A tracked `BlockStore` whose complete blocks may live in the host pool."""

    def __init__(self, layout: Layout, block: int, swapper: Swapper, extent: int) -> None:
        super().__init__(layout, block)
        self.swapper = swapper
        self.extent = extent  # points along the stored dim: the last block may be short
        self.host: dict[tuple, Offloaded] = {}
        self.complete: set[tuple] = set()  # blocks no write will touch again
        self.written: dict[tuple, int] = {}  # points written per block not yet complete

    # ------------------------------------------------------------ moves
    def _evictable(self, bkey: tuple) -> None:
        """A complete block on the device may go under pressure (newest last)."""
        buf = self.bufs.get(bkey)
        if bkey in self.complete and buf is not None and \
                self.lay.storage(buf)[1] >= self.swapper.min_bytes:
            self.swapper.order[(id(self), bkey)] = self

    def evict(self, bkey: tuple) -> int:
        """Move block `bkey` to the host pool; the device bytes this frees (0 if it is
        not on the device or a stored view of it shares its buffer)."""
        self.swapper.forget(self, bkey)
        buf = self.bufs.get(bkey)
        if buf is None:
            return 0
        acct = self.lay.acct
        k, n = self.lay.storage(buf)
        ref = acct.held.get(k)
        if ref is None or ref[1] != 1:
            return 0
        del acct.held[k]
        acct.credit(n)
        acct.host_charge(n)
        acct.swapped += n
        self.host[bkey] = Offloaded(self.swapper.to_host(buf), n)
        del self.bufs[bkey]
        del self.fronts[bkey]  # views of the old buffer are stale
        self.slots[bkey] = [None] * self.block
        return n

    def offload(self, key: tuple) -> int:
        """The schedule's offload of point `key`: its block goes once it is complete and
        the device is under pressure (`Swapper.pressed`)."""
        pre, i = self.lay.split(key)
        bkey = (pre, i // self.block)
        if bkey not in self.complete or bkey not in self.bufs or not self.swapper.pressed():
            return 0
        return self.evict(bkey)

    def fetch(self, key: tuple, ahead: bool) -> None:
        """The schedule's fetch of point `key`: its block back on the device (`ahead`: a
        prefetch, which never pushes other blocks out)."""
        pre, i = self.lay.split(key)
        bkey = (pre, i // self.block)
        away = self.host.get(bkey)
        if away is None:
            return
        cap = self.lay.acct.cap
        if ahead and cap is not None and self.lay.acct.live + away.nbytes > cap:
            return
        self._back(bkey)
        if ahead:
            self.lay.acct.prefetched += away.nbytes
        self._evictable(bkey)

    def _back(self, bkey: tuple) -> None:
        away = self.host.pop(bkey)
        acct = self.lay.acct
        acct.host_credit(away.nbytes)
        acct.fetched += away.nbytes
        buf = self.swapper.to_device(away.host)
        acct.hold(self.lay.tid, *self.lay.storage(buf))  # may evict other blocks
        self.bufs[bkey] = buf
        self.fronts[bkey] = self.lay.front(buf)

    def _present(self, bkeys: Iterable[tuple]) -> None:
        """Every block of a read on the device: none of them is evicted while the others
        come back (they leave the pressure order), and they rejoin it after."""
        keys = list(bkeys)
        for bkey in keys:
            self.swapper.forget(self, bkey)
        for bkey in keys:
            if bkey in self.host:
                self.lay.acct.demand_fetched += self.host[bkey].nbytes
                self._back(bkey)
        for bkey in keys:
            self._evictable(bkey)

    def _span(self, pre: tuple, lo: int, hi: int) -> list[tuple]:
        return [(pre, b) for b in range(lo // self.block, (max(hi, lo + 1) - 1) // self.block + 1)]

    # ------------------------------------------------------------ the store
    def write(self, pre: tuple, i: int, value: Any) -> None:
        b, j = divmod(i, self.block)
        bkey = (pre, b)
        if bkey in self.host:  # evicted early under pressure: written again
            self._present([bkey])
        super().write(pre, i, value)
        # Complete once every point of the block is written, in whatever order the
        # loop writes them (a backward recurrence writes the last point first).
        n = self.written.get(bkey, 0) + 1
        if n < min(self.block, self.extent - b * self.block):
            self.written[bkey] = n
            return
        self.written.pop(bkey, None)
        self.complete.add(bkey)
        self._evictable(bkey)

    def __getitem__(self, key: tuple) -> Any:
        pre, i = self.lay.split(key)
        bkey = (pre, i // self.block)
        if bkey in self.host:
            self._present([bkey])
        return super().__getitem__(key)

    def read_slice(self, pre: tuple, lo: int, hi: int) -> Any:
        if self.host:
            self._present(k for k in self._span(pre, lo, hi) if k in self.filled)
        return super().read_slice(pre, lo, hi)

    def read_blocks(self, pre: tuple, lo: int, hi: int) -> list[tuple[Any, int, int]]:
        if self.host:
            self._present(k for k in self._span(pre, lo, hi) if k in self.filled)
        return super().read_blocks(pre, lo, hi)

    def _forget(self, key: tuple) -> None:
        self.swapper.forget(self, key)
        self.complete.discard(key)
        self.written.pop(key, None)
        away = self.host.pop(key, None)
        if away is None:
            super()._forget(key)
            return
        self.lay.acct.host_credit(away.nbytes)
        del self.filled[key], self.slots[key]

    def clear(self) -> None:
        for bkey in list(self.filled):
            self.swapper.forget(self, bkey)
        for away in self.host.values():
            self.lay.acct.host_credit(away.nbytes)
        self.host.clear()
        self.complete.clear()
        self.written.clear()
        super().clear()
