"""Memory measurement (BENCHMARKS.md §7.1): a virtual-device accountant with a cap, and RSS.

Baselines charge their explicit device buffers (weights, caches, rollout storage, activations
kept for backward) to the accountant so that OOM points are emulated identically for everyone.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field

import psutil

OOM_MARKERS = (
    "oom", "out of memory", "allocating", "bytes", "cuda oom", "memory allocation failed",
    "insufficient memory", "memory error", "memoryerror", "cannot allocate",
)


class DeviceOutOfMemory(MemoryError):
    """Raised when live accountant bytes would exceed the device cap (emulated device OOM)."""


@dataclass
class DeviceMemoryAccountant:
    """Tracks live/peak bytes of named device buffers; raises past `cap_bytes`.

    `tick(step)` records an event-based sample (deterministic, one per decode/env step) while
    `recording` is on, which gives memory-over-time curves without a sampling thread.
    """

    cap_bytes: int | None = None
    live: int = 0
    peak: int = 0
    recording: bool = False
    buffers: dict[str, int] = field(default_factory=dict)
    samples: list[tuple[int, int, int]] = field(default_factory=list)  # (t_ns, step, live)

    def alloc(self, name: str, nbytes: int) -> None:
        """Charge `nbytes` for buffer `name` (re-allocating a name frees the old size first)."""
        nbytes = int(nbytes)
        old = self.buffers.get(name, 0)
        new_live = self.live - old + nbytes
        if self.cap_bytes is not None and new_live > self.cap_bytes:
            raise DeviceOutOfMemory(
                f"out of memory: allocating {nbytes} bytes for {name!r} with {self.live} live "
                f"bytes would exceed the device cap of {self.cap_bytes} bytes")
        self.buffers[name] = nbytes
        self.live = new_live
        self.peak = max(self.peak, self.live)

    def free(self, name: str) -> None:
        """Release a buffer previously charged with `alloc`."""
        self.live -= self.buffers.pop(name, 0)

    def free_all(self) -> None:
        """Release every buffer (end of one run)."""
        self.buffers.clear()
        self.live = 0

    def tick(self, step: int) -> None:
        """Record one timeline sample (no-op unless recording)."""
        if self.recording:
            self.samples.append((time.perf_counter_ns(), step, self.live))

    def write_timeline(self, path: str) -> None:
        """Write the event samples as CSV `curr_time,step,live_bytes`."""
        with open(path, "w") as f:
            f.write("curr_time,step,live_bytes\n")
            for t, s, b in self.samples:
                f.write(f"{t},{s},{b}\n")


def nbytes_of(*shape: int, itemsize: int = 4) -> int:
    """Bytes of a dense buffer of `shape` (fp32 by default)."""
    n = itemsize
    for d in shape:
        n *= int(d)
    return n


def current_rss() -> int:
    """Resident set size of this process, in bytes."""
    return int(psutil.Process().memory_info().rss)


def peak_rss() -> int:
    """Peak resident set size of this process, in bytes: VmHWM (which `reset_peak_rss` can
    reset), else `ru_maxrss` (KiB on Linux, lifetime maximum)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def reset_peak_rss() -> bool:
    """Reset this process's VmHWM to its current RSS (Linux >= 4.0, `clear_refs` 5), so that
    several points run in one process each get their own peak. False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def is_oom_text(text: str) -> bool:
    """The plot-time classification of §1.2: an error mentioning memory is an OOM."""
    low = text.lower()
    return any(m in low for m in OOM_MARKERS)
