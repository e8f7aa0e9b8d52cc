"""Tensor stores: per-point dicts keyed by the point's coordinates, and the memory
accountant behind `executor.memory_stats()` and the device-memory cap.

A plain dict is the fast path (a store write costs one dict assignment). When the config
asks for a cap or for accounting, stores are `TrackedStore`s that charge every write and
credit every free to one `MemoryAccountant`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tempo.core.errors import TempoMemoryError
from tempo.core.sdg import TensorId


class MemoryAccountant:
    """Live and peak bytes on the device; raises when a write would pass the cap."""

    def __init__(self, cap_bytes: int | None, describe: Callable[[TensorId], str]) -> None:
        self.cap = cap_bytes
        self.live = 0
        self.peak = 0
        self.describe = describe

    def charge(self, tid: TensorId, nbytes: int) -> None:
        new = self.live + nbytes
        if self.cap is not None and new > self.cap:
            raise TempoMemoryError(
                f"storing a point of {self.describe(tid)} ({nbytes} B) would raise live device "
                f"memory to {new} B, above device_memory_cap_bytes={self.cap}. Raise the cap, "
                "or keep fewer points alive (enable_gc=True frees each point after its last use)"
            )
        self.live = new
        self.peak = max(self.peak, new)

    def credit(self, nbytes: int) -> None:
        self.live -= nbytes


class TrackedStore(dict):
    """A point store that reports its writes and frees to the accountant."""

    def __init__(self, tid: TensorId, acct: MemoryAccountant, nbytes: Callable[[Any], int]):
        super().__init__()
        self.tid = tid
        self.acct = acct
        self.nbytes = nbytes

    def __setitem__(self, key: Any, value: Any) -> None:
        old = dict.get(self, key)
        self.acct.charge(self.tid, self.nbytes(value))
        if old is not None:
            self.acct.credit(self.nbytes(old))
        dict.__setitem__(self, key, value)

    def pop(self, key: Any, default: Any = None) -> Any:
        value = dict.pop(self, key, default)
        if value is not None and value is not default:
            self.acct.credit(self.nbytes(value))
        return value

    def clear(self) -> None:
        for v in self.values():
            self.acct.credit(self.nbytes(v))
        dict.clear(self)


class BlockStore:
    """Points of a tensor laid out along one domain dimension in preallocated blocks: a
    write copies into its slot, a slice read over that dimension is a view (O(1)), which
    is what growing reads such as a KV history `k[0:t+1]` need.

    Keys are full domain points; the blocked coordinate is at position `dim`. Physically
    the block dimension sits at `axis` of the buffer (just before the last spatial dim), so
    a history read as (L, ..., d) and permuted for attention needs no copy: its last two
    dims are a contiguous or transposed matrix. `move(x, axis)` brings it to the front."""

    def __init__(
        self, dim: int, size: int, alloc: Callable[[int], Any],
        release: Callable[[Any], None] | None = None, axis: int = 0,
        move: Callable[[Any, int], Any] | None = None,
    ) -> None:
        self.dim = dim
        self.size = size
        self.alloc = alloc
        self.release = release
        self.axis = axis
        self.lead = (slice(None),) * axis
        self.move = move if move is not None else (lambda x, a: x)
        self.bufs: dict[tuple, Any] = {}
        self.filled: dict[tuple, set[int]] = {}

    def _split(self, key: tuple) -> tuple[tuple, int]:
        d = self.dim
        return key[:d] + key[d + 1 :], key[d]

    def __setitem__(self, key: tuple, value: Any) -> None:
        pre, i = self._split(key)
        buf = self.bufs.get(pre)
        if buf is None:
            buf = self.bufs[pre] = self.alloc(self.size)
            self.filled[pre] = set()
        buf[self.lead + (i,)] = value
        self.filled[pre].add(i)

    def __getitem__(self, key: tuple) -> Any:
        pre, i = self._split(key)
        return self.bufs[pre][self.lead + (i,)]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple):
            return False
        pre, i = self._split(key)
        return i in self.filled.get(pre, ())

    def read_slice(self, pre: tuple, lo: int, hi: int) -> Any:
        """Points lo..hi-1 along the blocked dim, as a view of the block."""
        view = self.bufs[pre][self.lead + (slice(lo, hi),)]
        return self.move(view, self.axis) if self.axis else view

    def pop(self, key: tuple, default: Any = None) -> Any:
        pre, i = self._split(key)
        filled = self.filled.get(pre)
        if filled is None or i not in filled:
            return default
        filled.discard(i)
        if not filled:  # every written point freed: release the block
            del self.filled[pre]
            buf = self.bufs.pop(pre)
            if self.release is not None:
                self.release(buf)
        return None

    def clear(self) -> None:
        if self.release is not None:
            for buf in self.bufs.values():
                self.release(buf)
        self.bufs.clear()
        self.filled.clear()

    def values(self) -> Any:
        return self.bufs.values()

    def __len__(self) -> int:
        return sum(len(f) for f in self.filled.values())
