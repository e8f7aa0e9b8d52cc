"""Swapping to a host pool (ARCHITECTURE §6, §7). The schedule places the plan
(schedule/swaps.py): `offload` after a point's last near use, `fetch` before its far reads
and a prefetch iterations ahead. The host pool is counted apart from the device (a pinned
copy on a GPU, a separate copy on the CPU). Under `device_memory_cap_bytes` the plan's
offloads run only under pressure (near the cap: `Swapper.pressed`), so a program that fits
swaps nothing, and the runtime also offloads the least recently stored points when a
charge would pass the cap and the plan has not freed enough (points read in the stage
that made them, caps tighter than the plan). A read of a point still on the host fetches
it then (a demand fetch). Results are unchanged: the host copy is exact. Block stores move
whole blocks the same way (runtime/swap_blocks.py); both kinds share one `Swapper`, so
pressure takes the oldest point or complete block first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from tempo.core.configs import TUNING
from tempo.core.sdg import TensorId
from tempo.runtime.stores import MemoryAccountant, Storage, TrackedStore


class Offloaded:
    """A point living in the host pool: its host copy and the bytes it held on device."""

    __slots__ = ("host", "nbytes")

    def __init__(self, host: Any, nbytes: int) -> None:
        self.host = host
        self.nbytes = nbytes


class Evictable(Protocol):
    def evict(self, key: Any) -> int:
        """Move entry `key` (a point, or a block of a block store) to the host pool; the
        device bytes freed."""


class Swapper:
    """The accountant's pressure hook: offloads points and complete blocks, oldest
    stored first."""

    def __init__(self, acct: MemoryAccountant, to_host: Callable[[Any], Any],
                 to_device: Callable[[Any], Any], min_bytes: int) -> None:
        self.acct = acct
        self.to_host = to_host
        self.to_device = to_device
        self.min_bytes = min_bytes
        self.order: OrderedDict[tuple[int, Any], Evictable] = OrderedDict()
        acct.on_pressure = self.relieve

    def relieve(self, need: int) -> None:
        """Offload points until `need` bytes are free on the device, or none is left."""
        freed = 0
        for (sid, key), store in list(self.order.items()):
            if freed >= need:
                return
            del self.order[(sid, key)]
            freed += store.evict(key)

    def pressed(self) -> bool:
        """Whether the schedule's offloads should run: always without a cap (the plan is
        what keeps the device small), under a cap only when less than a
        `TUNING.swap_headroom`-th of
        the cap is free (the point to offload still counted live). Below that, an offload
        would only move bytes the device has room for (TD(n)'s idle Adam moments at a few
        MiB under a 64 MiB cap); the margin is room for the charges that follow (a
        learner's scratch), and whatever passes it the swapper relieves on demand."""
        cap = self.acct.cap
        return cap is None or self.acct.live > cap - cap // TUNING.swap_headroom

    def forget(self, store: Evictable, key: Any) -> None:
        self.order.pop((id(store), key), None)


class SwapStore(TrackedStore):
    """A tracked point store whose points may be offloaded to the host pool."""

    def __init__(self, tid: TensorId, acct: MemoryAccountant, storage: Storage,
                 swapper: Swapper) -> None:
        super().__init__(tid, acct, storage)
        self.swapper = swapper

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        k, n = self.storage(value)
        if n >= self.swapper.min_bytes and self.held[k][1] == 1:  # sole owner: may go
            self.swapper.order[(id(self), key)] = self

    def offload(self, key: Any) -> int:
        """The schedule's offload of point `key`: to the host pool under pressure
        (`Swapper.pressed`), else it stays (and may still go under pressure later)."""
        value = dict.get(self, key)
        if value is None or isinstance(value, Offloaded) or not self.swapper.pressed():
            return 0
        return self.evict(key)

    def evict(self, key: Any) -> int:
        """Move point `key` to the host pool; the device bytes this frees (0 if it is not
        stored, already offloaded, or shares its storage with another live value)."""
        self.swapper.forget(self, key)
        value = dict.get(self, key)
        if value is None or isinstance(value, Offloaded):
            return 0
        k, n = self.storage(value)
        ref = self.held.get(k)
        if ref is None or ref[1] != 1:
            return 0
        del self.held[k]
        self.acct.credit(n)
        self.acct.host_charge(n)
        self.acct.swapped += n
        dict.__setitem__(self, key, Offloaded(self.swapper.to_host(value), n))
        return n

    def fetch(self, key: Any, ahead: bool) -> None:
        """The schedule's fetch: point `key` back on the device before its read (`ahead`:
        a prefetch, iterations before it). Points not stored are skipped."""
        value = dict.get(self, key)
        if not isinstance(value, Offloaded):
            return
        cap = self.acct.cap
        if ahead and cap is not None and self.acct.live + value.nbytes > cap:
            return  # a prefetch is opportunistic: it never pushes other points out
        self._back(key, value)
        if ahead:
            self.acct.prefetched += value.nbytes

    def __getitem__(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if not isinstance(value, Offloaded):
            return value
        self.acct.demand_fetched += value.nbytes  # no fetch statement was in time
        return self._back(key, value)

    def _back(self, key: Any, value: Offloaded) -> Any:
        back = self.swapper.to_device(value.host)
        self.acct.host_credit(value.nbytes)
        self.acct.fetched += value.nbytes
        dict.pop(self, key)
        self.__setitem__(key, back)
        return back

    def pop(self, key: Any, default: Any = None) -> Any:
        self.swapper.forget(self, key)
        value = dict.get(self, key, default)
        if isinstance(value, Offloaded):
            dict.pop(self, key)
            self.acct.host_credit(value.nbytes)
            return None
        return super().pop(key, default)

    def clear(self) -> None:
        for key in list(self.keys()):
            self.pop(key)

    def values(self) -> Any:  # device values only: swapped points are on the host
        return [v for v in dict.values(self) if not isinstance(v, Offloaded)]
