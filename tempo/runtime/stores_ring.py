"""The ring store (ARCHITECTURE §5.7): a window store that keeps exactly the points its
readers can still need — W slots per prefix for reads within the W newest points — with
point `i` in slot `i mod W`, written in place and never moved.

The storage choice (runtime/store_choice.py) gives a tensor a ring when every read of it
along the stored dim is a point (`x[t-1]`) or a tiled read (`read_blocks`, ARCHITECTURE
§5.4) within the W newest points, by readers in the producer's loop: at the write of point
`t` every read still to come names points above `t-W`, which is what slot `t mod W` held.
A tiled read of the window arrives in order as at most two runs of slots (the tail of the
ring, then its head); a `rotated` ring hands a read covering all W points over as the ring
itself, in slot order — for readers whose result does not depend on the order of the points
(attention without a mask, sums), whose other blocked inputs are rings of the same size,
so their rows stay paired. A plain slice read that wraps joins its two runs (a copy).
With `whole` (torch, whose tiled kernels read views of the valid rows of a block of any
length) each run of a tiled read is handed over as the ring's front view and its rows, not
cut into blocks of U: a causal history in a ring of T slots (T not a multiple of U) is then
one view per step, not T/U blocks each costing the kernel its own calls.

Untiled window reads, which need their window as one in-order view, keep the compacting
`CircularStore` of runtime/stores.py.
"""

from __future__ import annotations

from typing import Any

from tempo.core.errors import TempoMemoryError
from tempo.runtime.stores import Layout, RangedStore


class RingStore(RangedStore):
    """`window` slots per prefix (`bufs`, `slots` and `filled` are keyed by prefix;
    `filled` holds point numbers); `block` caps the rows of one block of a tiled read."""

    def __init__(self, layout: Layout, window: int, block: int | None = None,
                 rotated: bool = False, whole: bool = False) -> None:
        super().__init__(layout)
        self.window = window
        self.block = window if whole else min(block or window, window)
        self.rotated = rotated
        self.newest: dict[tuple, int] = {}  # the newest point written, per prefix

    def write(self, pre: tuple, i: int, value: Any) -> None:
        slots = self.slots.get(pre)
        if slots is None:
            slots = self._alloc(pre, self.window)
        j = i % self.window
        live = self.filled[pre]
        live.discard(i - self.window)  # the point this slot held: no read names it again
        view = slots[j]  # (a slot's view serves every point it holds: T / W of them)
        self.lay.put(self._view(pre, slots, j) if view is None else view, value)
        live.add(i)
        if i > self.newest.get(pre, -1):
            self.newest[pre] = i

    def _check(self, pre: tuple, lo: int, hi: int) -> int:
        """The newest point of `pre`; raises for a read of points the ring no longer (or
        does not yet) hold."""
        newest = self.newest.get(pre, -1)
        if hi > lo and (lo <= newest - self.window or hi > newest + 1):
            lay = self.lay
            raise TempoMemoryError(
                f"{lay.acct.describe(lay.tid)} is read at points {lo}..{hi - 1}, outside the "
                f"{self.window} newest its ring store keeps (newest: {newest}; an internal "
                "storage choice error)")
        return newest

    def __getitem__(self, key: tuple) -> Any:
        pre, i = self.lay.split(key)
        if i not in self.filled.get(pre, ()):
            raise KeyError(key)
        slots, j = self.slots[pre], i % self.window
        view = slots[j]
        return self._view(pre, slots, j) if view is None else view

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple):
            return False
        pre, i = self.lay.split(key)
        return i in self.filled.get(pre, ())

    def _runs(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The slot ranges holding points lo..hi-1, in point order (the whole ring, in slot
        order, for a rotated ring read through all its points)."""
        W = self.window
        if self.rotated and hi - lo == W:
            return [(0, W)]
        s = lo % W
        e = s + hi - lo
        return [(s, e)] if e <= W else [(s, W), (0, e - W)]

    def read_blocks(self, pre: tuple, lo: int, hi: int) -> list[tuple[Any, int, int]]:
        """The read as views of `block` consecutive slots and the rows of each it covers
        (a block as long as the ring is the ring's front view itself: no backend call)."""
        if hi <= lo:
            return []
        self._check(pre, lo, hi)
        front = self.fronts.get(pre)
        if front is None:
            raise KeyError((pre, lo))
        V, W, out = self.block, self.window, []
        if V == W:  # the common case, one block: no loop
            if self.rotated and hi - lo == W:
                return [(front, 0, W)]
            s = lo % W
            if s + hi - lo <= W:
                return [(front, s, s + hi - lo)]
        for a, b in self._runs(lo, hi):
            for st in range(a, b, V):
                at = min(st, W - V)
                out.append((front if V == W else front[at: at + V], st - at,
                            min(b, st + V) - at))
        return out

    def read_slice(self, pre: tuple, lo: int, hi: int) -> Any:
        """Points lo..hi-1 in order: a view, or (when they wrap) the two runs joined."""
        front = self.fronts.get(pre)
        if front is None or hi <= lo:
            return self.lay.empty()
        self._check(pre, lo, hi)
        W = self.window
        s = lo % W
        e = s + hi - lo
        if e <= W:
            return front[s:e]
        return self.lay.cat([front[s:W], front[0:e - W]], 0)

    def pop(self, key: tuple, default: Any = None) -> Any:
        pre, i = self.lay.split(key)
        live = self.filled.get(pre)
        if live is None or i not in live:
            return default
        live.discard(i)
        if not live:  # nothing of this prefix alive: give the buffer back
            self._forget(pre)
            self.newest.pop(pre, None)
        return None

    def pop_range(self, pre: tuple, lo: int, hi: int) -> None:
        live = self.filled.get(pre)
        if live is None:
            return
        live.difference_update(range(lo, hi))
        if not live:
            self._forget(pre)
            self.newest.pop(pre, None)

    def clear(self) -> None:
        super().clear()
        self.newest.clear()
