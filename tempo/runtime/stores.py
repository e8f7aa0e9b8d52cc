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
                f"memory to {new} B, above the cap of {self.cap} B"
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
