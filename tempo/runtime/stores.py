"""Tensor stores and the memory accountant behind `executor.memory_stats()`, the memory
timeline and the device-memory cap (ARCHITECTURE §5.7, §7).

Five kinds of store, chosen per tensor from its readers (compiler/passes/storage.py picks
the layout, the executor checks the schedule allows it):

* point store: a dict keyed by the point's coordinates — the fast path (a write is one
  dict assignment); `TrackedStore` is the same dict charging writes and crediting frees.
* `BlockStore`: points along one domain dim in blocks of U, each allocated when its first
  point is written and released when its last point is freed, so memory grows (and
  shrinks) as a staircase of blocks instead of preallocating the whole bound. A write
  is one indexed assignment into the block's front view (`Layout.put_at`); a slice read
  within one block is a view.
* window stores, memory O(W), flat in T: `RingStore` (runtime/stores_ring.py) keeps
  exactly W points for point and tiled reads; `CircularStore`, for a window read as one
  slice `x[t-W+1:t+1]`, keeps a sliding buffer of 2W points per prefix: writes go to the
  next slot, and when the buffer is full the last W-1 points move to its front (an
  amortised copy of one point per write), so every window is a view in order.
* values consumed at once get no store at all (codegen binds them to a local).

Every store charges and credits one `MemoryAccountant`; swapped points and blocks
(runtime/swap.py, runtime/swap_blocks.py) live in its host pool, counted apart from the
device.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator
from typing import Any

from tempo.core.errors import TempoMemoryError
from tempo.core.sdg import TensorId
from tempo.runtime.store_arrays import Storage as Storage
from tempo.runtime.store_arrays import array_ops as array_ops  # (re-exported: the stores'
from tempo.runtime.store_arrays import slot_put as slot_put  # backend calls live there)
from tempo.runtime.store_arrays import storage_of as storage_of


class MemoryAccountant:
    """Live and peak bytes on the device and in the host pool, a per-step timeline, and
    the device cap (raises when a charge would pass it)."""

    def __init__(self, cap_bytes: int | None, describe: Callable[[TensorId], str]) -> None:
        self.cap = cap_bytes
        self.live = 0
        self.peak = 0
        self.host_live = 0
        self.host_peak = 0
        self.largest = 0  # the biggest single charge (a cap below it cannot work)
        self.swapped = 0  # bytes moved device -> host over the run
        self.fetched = 0  # bytes moved host -> device over the run
        self.prefetched = 0  # ... of which by the schedule's prefetches, ahead of the read
        self.demand_fetched = 0  # ... of which by a read finding its point on the host
        self.describe = describe
        self.timeline: list[tuple[int, int]] = []  # (device live, host live) per step
        self.on_pressure: Callable[[int], None] | None = None  # swap hook: bytes needed
        self.held: dict[int, list[int]] = {}  # storage key -> [bytes, references]

    def hold(self, tid: TensorId, key: int, nbytes: int) -> None:
        """One more reference to the device storage `key` (charged on the first): views
        of a stored buffer (a block read, a reshape) cost nothing more."""
        ref = self.held.get(key)
        if ref is not None:
            ref[1] += 1
            return
        self.charge(tid, nbytes)
        self.held[key] = [nbytes, 1]

    def drop(self, key: int) -> None:
        """One reference fewer to storage `key` (credited with the last)."""
        ref = self.held.get(key)
        if ref is None:
            return
        ref[1] -= 1
        if ref[1] == 0:
            del self.held[key]
            self.credit(ref[0])

    def charge(self, tid: TensorId, nbytes: int) -> None:
        if nbytes > self.largest:
            self.largest = nbytes
        new = self.live + nbytes
        if self.cap is not None and new > self.cap and self.on_pressure is not None:
            self.on_pressure(new - self.cap)
            new = self.live + nbytes
        if self.cap is not None and new > self.cap:
            raise TempoMemoryError(
                f"storing {self.describe(tid)} ({nbytes} B) would raise live device "
                f"memory to {new} B, above device_memory_cap_bytes={self.cap}. Raise the cap, "
                "keep fewer points alive (enable_gc=True frees each point after its last use)"
                ", or let Tempo move points to host memory (enable_swap=True)"
            )
        self.live = new
        if new > self.peak:
            self.peak = new

    def high(self, op_id: int, output: int, nbytes: int) -> None:
        """The generated code has charged a local `nbytes` and live passed the peak:
        check the cap (relieving pressure first), then record the peak."""
        if nbytes > self.largest:
            self.largest = nbytes
        cap = self.cap
        if cap is not None and self.live > cap:
            if self.on_pressure is not None:
                self.on_pressure(self.live - cap)
            if self.live > cap:
                self.live -= nbytes  # charge() raises, naming the tensor (or, if a
                self.charge(TensorId(op_id, output), nbytes)  # relief made room, adds)
        if self.live > self.peak:
            self.peak = self.live

    def credit(self, nbytes: int) -> None:
        self.live -= nbytes

    def host_charge(self, nbytes: int) -> None:
        self.host_live += nbytes
        self.host_peak = max(self.host_peak, self.host_live)

    def host_credit(self, nbytes: int) -> None:
        self.host_live -= nbytes

    def tick(self) -> None:
        """One timeline sample (the generated code calls it after each outer step)."""
        self.timeline.append((self.live, self.host_live))

    def reset_run(self) -> None:
        """Forget the timeline and peaks (stores are empty again)."""
        self.timeline.clear()
        self.peak = self.live
        self.host_peak = self.host_live
        self.swapped = self.fetched = self.prefetched = self.demand_fetched = 0


class TrackedStore(dict):
    """A point store that reports its writes and frees to the accountant, by storage: a
    point that is a view of memory already counted (a block store's buffer, another
    point) adds nothing. Each point's storage key is kept (`kept`), so a free asks the
    backend nothing."""

    def __init__(self, tid: TensorId, acct: MemoryAccountant, storage: Storage):
        super().__init__()
        self.tid = tid
        self.acct = acct
        self.held = acct.held
        self.storage = storage
        self.kept: dict[Any, int] = {}

    def __setitem__(self, key: Any, value: Any) -> None:
        # hold() and charge()'s common case inlined: this runs once per stored point
        if dict.__contains__(self, key):
            self.pop(key)
        k, n = self.storage(value)
        ref = self.held.get(k)
        if ref is None:
            a = self.acct
            new = a.live + n
            if n > a.largest or (a.cap is not None and new > a.cap):
                a.charge(self.tid, n)  # records the largest; the cap: relief or an error
            else:
                a.live = new
                if new > a.peak:
                    a.peak = new
            self.held[k] = [n, 1]
        else:
            ref[1] += 1
        self.kept[key] = k
        dict.__setitem__(self, key, value)

    def pop(self, key: Any, default: Any = None) -> Any:
        value = dict.pop(self, key, default)
        if value is not None and value is not default:
            k = self.kept.pop(key, None)
            if k is None:
                k = self.storage(value)[0]
            ref = self.held.get(k)
            if ref is not None:
                ref[1] -= 1
                if not ref[1]:
                    del self.held[k]
                    self.acct.live -= ref[0]
        return value

    def clear(self) -> None:
        for v in self.values():
            self.acct.drop(self.storage(v)[0])
        dict.clear(self)
        self.kept.clear()

    def device_bytes(self) -> int:
        return sum(self.acct.held[k][0] for k in {self.storage(v)[0] for v in self.values()}
                   if k in self.acct.held)


class Layout:
    """How a store lays out points of one tensor along a domain dim: the backend calls it
    needs, and where the stored dim sits in a buffer (`axis`, just before the last spatial
    dim, so a history read as (L, ..., d) and permuted for attention needs no copy)."""

    def __init__(self, tid: TensorId, dim: int, point_shape: tuple[int, ...],
                 alloc: Callable[[tuple[int, ...]], Any], storage: Storage,
                 move: Callable[[Any, int], Any], cat: Callable[[list[Any], int], Any],
                 select: Callable[[Any, int, int], Any], put: Callable[[Any, Any], None],
                 acct: MemoryAccountant,
                 put_at: Callable[[Any, int, Any], None] | None = None) -> None:
        self.tid = tid
        self.dim = dim
        self.axis = max(len(point_shape) - 1, 0)
        self.point_shape = point_shape
        self.alloc_raw = alloc
        self.storage = storage
        self.move = move
        self.cat = cat
        self.select = select
        self.put = put
        # put_at(front, j, value): point j of a front view written in one backend call
        self.put_at = put_at if put_at is not None else (
            lambda f, j, v: put(select(f, 0, j), v))
        self.acct = acct
        self.lead = (slice(None),) * self.axis

    def buffer(self, n: int) -> Any:
        """A buffer of `n` points (the stored dim at `axis`), charged to the device."""
        s = self.point_shape
        buf = self.alloc_raw(s[: self.axis] + (n,) + s[self.axis:])
        self.acct.hold(self.tid, *self.storage(buf))
        return buf

    def adopt(self, buf: Any) -> Any:
        """`buf`, a full buffer laid out as `buffer` lays one out (made elsewhere, e.g.
        stacked in place of a copy), charged to the device as `buffer` charges."""
        self.acct.hold(self.tid, *self.storage(buf))
        return buf

    def release(self, buf: Any) -> None:
        self.acct.drop(self.storage(buf)[0])

    def split(self, key: tuple) -> tuple[tuple, int]:
        d = self.dim
        return key[:d] + key[d + 1:], key[d]

    def empty(self) -> Any:
        """A read of no points (a range before anything was written)."""
        s = self.point_shape
        return self.front(self.alloc_raw(s[: self.axis] + (0,) + s[self.axis:]))

    def front(self, view: Any) -> Any:
        """A range view with the stored dim brought to the front (how reads see it)."""
        return self.move(view, self.axis) if self.axis else view


class RangedStore(abc.ABC):
    """What block and window stores share: buffers of points along one dim (`bufs`), each
    buffer's view with that dim in front (`fronts`, made once per buffer: reads slice it
    with one backend call, or none; block writes index it, `Layout.put_at`), a view per
    slot (`slots`, made at first use: window writes copy into them, block stores make
    them for point reads only) and the points alive (`filled`)."""

    def __init__(self, layout: Layout) -> None:
        self.lay = layout
        self.dim = layout.dim
        self.bufs: dict[tuple, Any] = {}
        self.fronts: dict[tuple, Any] = {}
        self.slots: dict[tuple, list[Any]] = {}
        self.filled: dict[tuple, set[int]] = {}

    def _alloc(self, key: tuple, n: int, buf: Any = None) -> list[Any]:
        """A new buffer of `n` points under `key` (`buf`: this one, already filled), its
        front view and empty slots."""
        buf = self.bufs[key] = self.lay.buffer(n) if buf is None else self.lay.adopt(buf)
        self.fronts[key] = self.lay.front(buf)
        self.filled[key] = set()
        slots = self.slots[key] = [None] * n
        return slots

    def _view(self, key: tuple, slots: list[Any], j: int) -> Any:
        """Slot `j`'s view, made when first needed: with every other slot's at once where
        the backend makes them in one call (torch's `unbind`: ~3x cheaper per view than
        a `select` each). Window stores write through them (a slot holds many points);
        block stores only read through them (`BlockStore.write`)."""
        front = self.fronts[key]
        unbind = getattr(front, "unbind", None)
        if unbind is not None and len(slots) > 1:
            slots[:] = unbind(0)
            return slots[j]
        view = slots[j] = self.lay.select(self.bufs[key], self.lay.axis, j)
        return view

    @abc.abstractmethod
    def write(self, pre: tuple, i: int, value: Any) -> None:
        """Copy `value` into point `i` along the stored dim (each store places it)."""

    def __setitem__(self, key: tuple, value: Any) -> None:
        pre, i = self.lay.split(key)
        self.write(pre, i, value)

    @abc.abstractmethod
    def pop(self, key: tuple, default: Any = None) -> Any:
        """Free point `key` (its buffer goes once no point of it is alive)."""

    def pop_range(self, pre: tuple, lo: int, hi: int) -> None:
        """Free points lo..hi-1 along the stored dim (a loop of frees, in one call)."""
        d = self.dim
        for i in range(lo, hi):
            self.pop(pre[:d] + (i,) + pre[d:])

    def _forget(self, key: tuple) -> None:
        """Give the buffer `key` back (its last point was freed)."""
        del self.filled[key], self.slots[key], self.fronts[key]
        self.lay.release(self.bufs.pop(key))

    def clear(self) -> None:
        for buf in self.bufs.values():
            self.lay.release(buf)
        self.bufs.clear()
        self.fronts.clear()
        self.slots.clear()
        self.filled.clear()

    def values(self) -> Iterator[Any]:
        return iter(self.bufs.values())

    def device_bytes(self) -> int:
        return sum(self.lay.storage(b)[1] for b in self.bufs.values())

    def __len__(self) -> int:
        return sum(len(f) for f in self.filled.values())


class BlockStore(RangedStore):
    """Blocks of `block` points along one domain dim, allocated on first write, freed when
    their last point is (ARCHITECTURE §5.7). Keys are full domain points; `bufs`, `slots`
    and `filled` are keyed by (prefix, block number)."""

    def __init__(self, layout: Layout, block: int) -> None:
        super().__init__(layout)
        self.block = block
        self.put_at = layout.put_at  # (an attribute read fewer on the hot write)

    def _open(self, bkey: tuple) -> list[Any]:
        """A new block; its slot views are made when first read (a block of U points may
        see far fewer writes, e.g. T < U, and is reopened every outer iteration)."""
        return self._alloc(bkey, self.block)

    def write(self, pre: tuple, i: int, value: Any) -> None:
        """The generated code's write: point `i` assigned into its block's front view, one
        backend call (torch's `front[j] = value`: a view made and dropped inside torch,
        where a slot view per point cost as much again as the copy, ~1 us each to make
        and free on this machine: E1 writes 2,048 K/V points a run)."""
        U = self.block
        b = i // U
        bkey = (pre, b)
        front = self.fronts.get(bkey)
        if front is None:
            self._open(bkey)
            front = self.fronts[bkey]
        j = i - b * U
        self.put_at(front, j, value)
        self.filled[bkey].add(j)

    def __getitem__(self, key: tuple) -> Any:
        pre, i = self.lay.split(key)
        b, j = divmod(i, self.block)
        slots = self.slots[(pre, b)]
        view = slots[j]
        return self._view((pre, b), slots, j) if view is None else view

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple):
            return False
        pre, i = self.lay.split(key)
        b, j = divmod(i, self.block)
        return j in self.filled.get((pre, b), ())

    def read_slice(self, pre: tuple, lo: int, hi: int) -> Any:
        """Points lo..hi-1 along the stored dim: a view within one block; a read that
        spans blocks joins their views (tiling, §5.4, makes reads block-aligned)."""
        U = self.block
        b0 = lo // U
        if hi <= (b0 + 1) * U or hi <= lo:
            front = self.fronts.get((pre, b0))
            if front is None:  # an empty range before any write
                return self.lay.empty()
            return front[lo - b0 * U: max(hi, lo) - b0 * U]
        parts = []
        for b in range(b0, (hi - 1) // U + 1):
            s, e = max(lo, b * U) - b * U, min(hi, (b + 1) * U) - b * U
            parts.append(self.fronts[(pre, b)][s:e])
        return self.lay.cat(parts, 0)

    def read_blocks(self, pre: tuple, lo: int, hi: int) -> list[tuple[Any, int, int]]:
        """The range as whole-block views (static shape U) and the valid count of each:
        what a tiled (statified) read iterates over; the last block's tail is padding."""
        U, fronts = self.block, self.fronts
        b0 = lo // U
        if b0 * U + U >= hi > lo:  # one block (a short history, a window): no loop
            return [(fronts[(pre, b0)], lo - b0 * U, hi - b0 * U)]
        out = []
        for b in range(b0, (hi - 1) // U + 1):
            s = max(lo, b * U) - b * U
            e = min(hi, (b + 1) * U) - b * U
            out.append((fronts[(pre, b)], s, e))
        return out

    def pop_range(self, pre: tuple, lo: int, hi: int) -> None:
        U = self.block
        for b in range(lo // U, (hi - 1) // U + 1) if hi > lo else ():
            filled = self.filled.get((pre, b))
            if filled is not None:
                filled.difference_update(range(max(lo, b * U) - b * U,
                                               min(hi, (b + 1) * U) - b * U))
                if not filled:
                    self._forget((pre, b))

    def pop(self, key: tuple, default: Any = None) -> Any:
        pre, i = self.lay.split(key)
        b, j = divmod(i, self.block)
        bkey = (pre, b)
        filled = self.filled.get(bkey)
        if filled is None or j not in filled:
            return default
        filled.discard(j)
        if not filled:  # every written point freed: release the block
            self._forget(bkey)
        return None


class CircularStore(RangedStore):
    """A sliding window of the last `window` points along one dim, per prefix: a buffer of
    W + `slack` slots (2W unless given) written in order; when full, the newest W-1 points
    move to the front (in chunks that never overlap their source, a copy of W-1 points
    every slack+1 writes). Every read of at most W trailing points is an in-order view;
    memory is flat in the bound. The storage choice guarantees writes advance one point at
    a time per prefix and reads never reach further back than W-1 points behind the newest
    write."""

    def __init__(self, layout: Layout, window: int, block: int | None = None,
                 slack: int | None = None) -> None:
        super().__init__(layout)  # keyed by prefix; `filled` holds point numbers
        self.window = window
        self.cap = window + max(1, window if slack is None else slack)
        self.block = min(block or self.cap, self.cap)  # rows per block of a tiled read
        self.base: dict[tuple, int] = {}   # point held by slot 0

    def write(self, pre: tuple, i: int, value: Any) -> None:
        slots = self.slots.get(pre)
        if slots is None:
            slots = self._alloc(pre, self.cap)
            self.base[pre] = i
        j = i - self.base[pre]
        if j >= self.cap:  # full: keep the newest W-1 points, at the front
            self._compact(pre, i)
            j = i - self.base[pre]
        elif j < 0:
            raise TempoMemoryError(
                f"{self.lay.acct.describe(self.lay.tid)} was written out of order into its "
                "window store (an internal storage choice error)")
        view = slots[j]  # (a slot's view serves every point it holds, unlike a block's)
        self.lay.put(self._view(pre, slots, j) if view is None else view, value)
        self.filled[pre].add(i)

    def _compact(self, pre: tuple, i: int) -> None:
        """Before writing point `i` past the end: move points i-W+1..i-1 to the front, in
        chunks as long as the distance they move (a chunk and its source never overlap:
        torch refuses overlapping copies)."""
        keep, base = self.window - 1, self.base[pre]
        lo = max(i - keep, base)
        n = base + self.cap - lo  # how many of those the buffer still holds
        if n > 0 and keep:
            front = self.fronts[pre]
            dst, src = lo - (i - keep), lo - base
            step = src - dst  # >= slack + 1
            for a in range(0, n, step):
                b = min(n, a + step)
                self.lay.put(front[dst + a: dst + b], front[src + a: src + b])
        self.base[pre] = i - keep
        live = self.filled[pre]
        for p in [p for p in live if p < i - keep]:
            live.discard(p)  # overwritten: not readable any more

    def _slot(self, pre: tuple, i: int) -> int:
        j = i - self.base[pre]
        if not 0 <= j < self.cap or i not in self.filled.get(pre, ()):
            raise KeyError((pre, i))
        return j

    def __getitem__(self, key: tuple) -> Any:
        pre, i = self.lay.split(key)
        slots, j = self.slots[pre], self._slot(pre, i)
        view = slots[j]
        return self._view(pre, slots, j) if view is None else view

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple):
            return False
        pre, i = self.lay.split(key)
        return i in self.filled.get(pre, ())

    def _base(self, pre: tuple, lo: int, hi: int) -> int | None:
        """The point slot 0 holds (None before any write); raises for a read of points the
        window no longer keeps."""
        base = self.base.get(pre)
        if base is not None and hi > lo and lo < base:
            lay = self.lay
            raise TempoMemoryError(
                f"{lay.acct.describe(lay.tid)} is read at points {lo}..{hi - 1}, older than "
                f"its window store keeps (an internal storage choice error)")
        return base

    def read_slice(self, pre: tuple, lo: int, hi: int) -> Any:
        base = self._base(pre, lo, hi)
        if base is None:
            return self.lay.empty()
        return self.fronts[pre][lo - base: max(hi, lo) - base]

    def read_blocks(self, pre: tuple, lo: int, hi: int) -> list[tuple[Any, int, int]]:
        """The window as views of `block` consecutive slots from its first point (the last
        one moved back to end at the buffer's end) and the rows of each that it covers; a
        block as long as the buffer is the buffer's front view itself (no backend call)."""
        if hi <= lo:
            return []
        base = self._base(pre, lo, hi)
        if base is None:
            raise KeyError((pre, lo))
        V, front, out = self.block, self.fronts[pre], []
        for st in range(lo - base, hi - base, V):
            at = min(st, self.cap - V)
            out.append((front if V == self.cap else front[at: at + V], st - at,
                        min(hi - base, st + V) - at))
        return out

    def pop(self, key: tuple, default: Any = None) -> Any:
        pre, i = self.lay.split(key)
        live = self.filled.get(pre)
        if live is None or i not in live:
            return default
        live.discard(i)
        if not live:  # nothing of this prefix alive: give the buffer back
            del self.base[pre]
            self._forget(pre)
        return None

    def clear(self) -> None:
        super().clear()
        self.base.clear()
