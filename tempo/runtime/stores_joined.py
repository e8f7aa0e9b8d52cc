"""Block stores whose blocks lie end to end in one buffer per prefix, so any range of the
stored dim is one view (ARCHITECTURE §5.4, §5.7).

A causal decoder reads its key/value history `k[0:t+1]` at every step. In separate blocks
of U points that read is a list of blocks, and the attention over it is a chain of small
calls per block (scores per block, a softmax over them joined, a matmul-accumulate per
block: 2n + 6 calls for n blocks), which at T = 1024 cost Tempo ~0.2 ms a token over the
torch decoder that slices one preallocated cache (E1, 2026-11-28: 1.11-1.21x torch-opt).
When every read of the stored dim is a growing prefix `x[0:e]` (`Slice.is_growing_slice`),
no block is freed before the prefix's last read anyway, so laying the blocks out in one
buffer of the dim's extent loses no memory: a tiled read is then the buffer's front view
with its valid range (one "block" of static shape, the extent rounded up to U), which the
torch kernels narrow to one `scaled_dot_product_attention`, and a slice spanning blocks is
a view instead of a `cat`.

Memory stays a staircase of blocks: the buffer is allocated uncommitted (a host
allocation's pages are only backed once touched), and each block is charged to the
accountant when it is first opened; the buffer's charge is credited when its last block
and every view of it are gone (a block freed earlier stays charged: its pages stay
mapped). The executor picks these stores only on torch on the host (`on_cpu`), where the
tiled kernels read views of the valid rows and a GPU would commit the whole buffer at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tempo.runtime.stores import BlockStore, Layout
from tempo.runtime.stores_deferred import DeferredBlockStore


@dataclass
class _Arena:
    """One prefix's buffer: the whole buffer, its front view (stored dim first), the blocks
    charged so far and the blocks open now."""

    buf: Any
    front: Any
    charged: set[int] = field(default_factory=set)
    open: set[int] = field(default_factory=set)


class JoinedBlockStore(BlockStore):
    """`BlockStore` whose blocks of a prefix are consecutive views of one buffer holding
    `extent` points (rounded up to whole blocks)."""

    def __init__(self, layout: Layout, block: int, extent: int = 0) -> None:
        super().__init__(layout, block)
        self.extent = extent
        self.arenas: dict[tuple, _Arena] = {}

    def _arena(self, pre: tuple) -> _Arena:
        rec = self.arenas.get(pre)
        if rec is None:
            lay, ax = self.lay, self.lay.axis
            n = -(-self.extent // self.block) * self.block
            s = lay.point_shape
            buf = lay.alloc_raw(s[:ax] + (n,) + s[ax:])  # charged block by block
            rec = self.arenas[pre] = _Arena(buf, lay.front(buf))
        return rec

    def _alloc(self, key: tuple, n: int, buf: Any = None) -> list[Any]:
        """Block `key` as a view of its prefix's buffer, charged the first time it opens
        (`buf`: the block's points, already stacked, copied in)."""
        pre, b = key
        rec = self._arena(pre)
        U, lay = self.block, self.lay
        if b not in rec.charged:
            k, total = lay.storage(rec.buf)
            nbytes = total // (rec.front.shape[0] // U)
            acct = lay.acct
            acct.charge(lay.tid, nbytes)  # the cap is checked here, as for a new block
            ref = acct.held.get(k)
            if ref is None:
                acct.held[k] = [nbytes, 0]  # adopt() below takes the reference
            else:
                ref[0] += nbytes
            rec.charged.add(b)
        rec.open.add(b)
        view = rec.buf[(slice(None),) * lay.axis + (slice(b * U, (b + 1) * U),)]
        slots = super()._alloc(key, n, view)
        if buf is not None:
            lay.put(view, buf)
        return slots

    def _forget(self, key: tuple) -> None:
        super()._forget(key)
        pre, b = key
        rec = self.arenas.get(pre)
        if rec is not None:
            rec.open.discard(b)
            if not rec.open:
                del self.arenas[pre]

    def clear(self) -> None:
        super().clear()
        self.arenas.clear()

    def read_blocks(self, pre: tuple, lo: int, hi: int) -> list[tuple[Any, int, int]]:
        """The range as one block: the buffer's front view and the rows lo..hi-1 of it."""
        rec = self.arenas.get(pre)
        if rec is None or hi <= lo:
            return super().read_blocks(pre, lo, hi)
        if (hi - 1) // self.block not in rec.open:
            raise KeyError((pre, hi - 1))  # as a missing block does in BlockStore
        return [(rec.front, lo, hi)]

    def read_slice(self, pre: tuple, lo: int, hi: int) -> Any:
        rec = self.arenas.get(pre)
        if rec is None or hi <= lo:
            return super().read_slice(pre, lo, hi)
        return rec.front[lo:hi]

    def device_bytes(self) -> int:
        held = self.lay.acct.held
        return sum(held[k][0] for k in {self.lay.storage(r.buf)[0] for r in
                                        self.arenas.values()} if k in held)


class JoinedDeferredBlockStore(DeferredBlockStore, JoinedBlockStore):
    """`DeferredBlockStore` (writes copied in at a block's first read) over joined blocks:
    a block settled whole is stacked and copied into its place in the buffer."""

    def __init__(self, layout: Layout, block: int, stack: Any, extent: int) -> None:
        super().__init__(layout, block, stack)
        self.extent = extent
