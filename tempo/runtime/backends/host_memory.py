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
its high-water mark instead of shrinking after a peak. So it is applied only while nobody
else chose a policy: not when the user set glibc's malloc thresholds in the environment
(`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`, `GLIBC_TUNABLES=glibc.malloc.…`), and
not inside `tempo.memsave.memory.freed_memory_returned()` (its address-space measurements
need frees to shrink VmSize; it restores this policy when it ends). The two packages import
nothing of each other; they share the policy in force through `MALLOPT_ENV`.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
TRIM_THRESHOLD_BYTES = 1 << 30
"""Free heap top kept before glibc returns it to the OS."""
MMAP_THRESHOLD_BYTES = 32 << 20
"""Allocations below this come from the heap (glibc's upper bound for the setting);
larger ones are mmapped (their page faults are small next to the work on them)."""

MALLOPT_ENV = "TEMPO_MALLOPT"
"""The mallopt settings in force, "pid:param=value,..." (tempo.memsave.memory reads the
same); the pid makes a child process, which inherits the variable but not the policy,
see none."""
KEEP = f"{M_MMAP_THRESHOLD}={MMAP_THRESHOLD_BYTES},{M_TRIM_THRESHOLD}={TRIM_THRESHOLD_BYTES}"
USER_MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def users_malloc_policy() -> str | None:
    """The environment setting by which the user chose glibc's thresholds, if any."""
    for name in USER_MALLOC_ENV:
        if name in os.environ:
            return name
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if "glibc.malloc.mmap_threshold" in tunables or "glibc.malloc.trim_threshold" in tunables:
        return "GLIBC_TUNABLES"
    return None


def keep_freed_host_memory() -> bool:
    """Make glibc keep freed memory for reuse (see the module doc). False where it is not
    applied: not glibc (other allocators cache anyway), or another policy is in force —
    the user's environment, or tempo.memsave's while it measures."""
    pid, _, current = os.environ.get(MALLOPT_ENV, "").partition(":")
    ours = pid == str(os.getpid())  # unset, or a parent's (inherited): not in force here
    if ours and current == KEEP:
        return True
    if ours or users_malloc_policy() is not None:
        return False
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        if not hasattr(libc, "gnu_get_libc_version"):
            return False
        ok = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
        ok = libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1 and ok
        if ok:
            os.environ[MALLOPT_ENV] = f"{os.getpid()}:{KEEP}"
        return ok
    return False
