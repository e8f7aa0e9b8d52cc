"""Host (CPU) memory behaviour of eager backends: freed tensors stay in the heap.

PyTorch's CPU allocator is glibc's malloc. With glibc's defaults a freed tensor at the top of
the heap is trimmed back to the OS once the free top exceeds M_TRIM_THRESHOLD (2x the mmap
threshold, which adapts up to ~1 MiB), so the next tensor of that size page-faults every
4 KiB page again. A learner holding several (4096, 64) float tensors at once (1 MiB each,
the E5 PPO learner) paid ~1 ms per elementwise op for the faults, where the op itself takes
~0.15 ms: the learner region ran 24 ms per call, 7.9 ms with freed memory kept (measured,
one thread). Keeping freed memory in the heap is what tcmalloc/jemalloc do, and what
PyTorch's own CUDA caching allocator does on the device.

The setting is process-wide (malloc has one policy per process): the resident set stays at
its high-water mark instead of shrinking after a peak. `tempo.memsave`'s address-space
measurement sets the opposite policy for itself (it wants frees to shrink VmSize).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
TRIM_THRESHOLD_BYTES = 1 << 30
"""Free heap top kept before glibc returns it to the OS."""
MMAP_THRESHOLD_BYTES = 32 << 20
"""Allocations below this come from the heap (glibc's upper bound for the setting);
larger ones are mmapped (their page faults are small next to the work on them)."""

_done = False


def keep_freed_host_memory() -> bool:
    """Make glibc keep freed memory for reuse (see the module doc); once per process.
    False where the C library is not glibc (nothing to do: other allocators cache)."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        if not hasattr(libc, "gnu_get_libc_version"):
            return False
        ok = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
        ok = libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1 and ok
        _done = ok
        return ok
    return False
