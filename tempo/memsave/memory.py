"""Honest CPU memory accounting: saved-for-backward bytes, address-space caps, batch search.

Saved bytes are counted by unique storage through ``saved_tensors_hooks`` (q/k/v views and an
LN output saved by three Linears count once; a saved view counts its whole storage). Peak RSS
and batch limits are measured in fresh subprocesses (see :mod:`tempo.memsave.probe`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import torch
from torch import nn


@dataclass
class SavedTensors:
    """Storages saved for backward: data_ptr -> bytes, plus the shapes/dtypes seen."""

    storages: dict[int, int] = field(default_factory=dict)
    tensors: list[tuple[tuple[int, ...], torch.dtype]] = field(default_factory=list)
    excluded: set[int] = field(default_factory=set)

    @property
    def total_bytes(self) -> int:
        return sum(self.storages.values())

    def contains(self, t: torch.Tensor) -> bool:
        """Whether the storage of ``t`` was saved."""
        return t.untyped_storage().data_ptr() in self.storages


@contextlib.contextmanager
def record_saved(exclude: Iterable[torch.Tensor] = ()) -> Iterator[SavedTensors]:
    """Record every tensor saved for backward inside the block (excluding ``exclude`` storages)."""
    rec = SavedTensors(excluded={t.untyped_storage().data_ptr() for t in exclude})

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        ptr = st.data_ptr()
        rec.tensors.append((tuple(t.shape), t.dtype))
        if ptr not in rec.excluded and st.nbytes() > 0:
            rec.storages[ptr] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield rec


def saved_bytes(
    fn: Callable[[], torch.Tensor], model: nn.Module | None = None, inputs: Iterable = ()
) -> tuple[int, torch.Tensor]:
    """Bytes saved for backward by ``fn()`` (parameters of ``model`` and ``inputs`` excluded)."""
    exclude = [*(model.parameters() if model is not None else ()), *inputs]
    with record_saved(exclude) as rec:
        out = fn()
    return rec.total_bytes, out


def _native_dropout(
    input: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> torch.Tensor:
    """F.dropout's signature, parameter names included (callers may pass `input=`)."""
    if not training or p == 0.0:
        return input
    return torch.native_dropout(input, p, True)[0]


@contextlib.contextmanager
def bool_mask_dropout() -> Iterator[None]:
    """Make ``F.dropout`` save a bool mask, as it does on GPU (CPU dropout saves fp32 noise)."""
    original = torch.nn.functional.dropout
    torch.nn.functional.dropout = _native_dropout
    try:
        yield
    finally:
        torch.nn.functional.dropout = original


def vm_size_bytes() -> int:
    """Current virtual address-space size of this process (VmSize)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("VmSize not found in /proc/self/status")


MALLOPT_ENV = "TEMPO_MALLOPT"
"""The glibc `mallopt` settings in force in this process, as "pid:param=value,..." (unset,
or another pid's: glibc's own). tempo.memsave and Tempo's torch backend
(tempo.runtime.backends.host_memory, which keeps freed memory in the heap) import nothing
of each other: this variable is how they share the one per-process policy — each records
what it sets, the backend leaves a policy it did not set alone, and
`freed_memory_returned` restores the one it found."""
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
RETURN_POLICY = {M_MMAP_THRESHOLD: 64 * 1024, M_TRIM_THRESHOLD: 128 * 1024}
"""Tensors of 64 KiB and more are mmapped, so their frees shrink the address space, and a
free heap top above glibc's default 128 KiB goes back to the OS."""
GLIBC_DEFAULTS = {M_MMAP_THRESHOLD: ("MALLOC_MMAP_THRESHOLD_", 128 * 1024),
                  M_TRIM_THRESHOLD: ("MALLOC_TRIM_THRESHOLD_", 128 * 1024)}
"""Per setting: the environment variable glibc took it from at start-up, else its default."""


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") else None


def _parse(policy: str | None) -> dict[int, int]:
    """The settings `policy` (a MALLOPT_ENV value) records for this process."""
    pid, _, pairs = (policy or "").partition(":")
    if pid != str(os.getpid()):
        return {}
    return {int(k): int(v) for k, v in (p.split("=") for p in pairs.split(",") if p)}


@contextlib.contextmanager
def freed_memory_returned() -> Iterator[None]:
    """Inside the block glibc mmaps tensors >= 64 KiB, so frees really shrink the address
    space (what VmSize caps and RSS peaks need), and the heap is trimmed on entry and exit.
    On exit the policy in force before is restored — Tempo's torch backend's (it keeps
    freed memory, see `MALLOPT_ENV`), else glibc's default threshold. No-op off glibc.
    In a process whose heap already holds freed memory, new tensors may still reuse it
    (glibc serves a request from a free chunk before mmapping): the probes measure in
    fresh subprocesses for that reason."""
    libc = _libc()
    if libc is None:
        yield
        return
    before = os.environ.get(MALLOPT_ENV)
    found = _parse(before)
    for k, v in RETURN_POLICY.items():
        libc.mallopt(k, v)
    settings = {**found, **RETURN_POLICY}.items()
    os.environ[MALLOPT_ENV] = f"{os.getpid()}:" + ",".join(f"{k}={v}" for k, v in settings)
    libc.malloc_trim(0)
    try:
        yield
    finally:
        libc.malloc_trim(0)
        for k in RETURN_POLICY:
            env, default = GLIBC_DEFAULTS[k]
            libc.mallopt(k, found.get(k, int(os.environ.get(env, default))))
        if before is None:
            os.environ.pop(MALLOPT_ENV, None)
        else:
            os.environ[MALLOPT_ENV] = before


@contextlib.contextmanager
def address_space_cap(extra_bytes: int) -> Iterator[None]:
    """Cap this process's address space at (current VmSize + ``extra_bytes``) inside the block.

    An allocation past the cap raises ``RuntimeError`` from PyTorch's CPU allocator: a CPU OOM.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = vm_size_bytes() + extra_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def is_oom(err: BaseException) -> bool:
    """Whether ``err`` is an allocation failure. Under an address-space cap oneDNN reports
    one as "could not create a primitive" (it cannot allocate the primitive's memory; seen
    in the slow BERT auto-batch test when the process had mapped more libraries)."""
    text = str(err).lower()
    return isinstance(err, MemoryError) or any(
        k in text for k in ("can't allocate", "out of memory", "allocat", "bad_alloc",
                            "could not create a primitive")
    )


def step_fits_under_cap(step: Callable[[], None], extra_bytes: int) -> bool:
    """Run ``step`` under an address-space cap; False on a CPU OOM."""
    with freed_memory_returned():
        try:
            with address_space_cap(extra_bytes):
                step()
            return True
        except (RuntimeError, MemoryError) as err:
            if not is_oom(err):
                raise
            return False


def largest_batch(fits: Callable[[int], bool], limit: int = 1024) -> int:
    """Largest b <= limit with fits(b), assuming monotone feasibility (0 if b = 1 fails).

    Doubles until the first failure, then bisects between the last success and that failure.
    """
    if not fits(1):
        return 0
    good, bad = 1, None
    while bad is None:
        nxt = min(good * 2, limit)
        if nxt == good:
            return good
        if fits(nxt):
            good = nxt
        else:
            bad = nxt
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


def subprocess_env() -> dict[str, str]:
    """Environment for measuring subprocesses: frees go back to the OS, two threads."""
    env = dict(os.environ)
    env.update(
        MALLOC_MMAP_THRESHOLD_="65536",
        MALLOC_ARENA_MAX="2",
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "2"),
    )
    return env


def fits_under_cap(
    step: Callable[[nn.Module, int], None], extra_bytes: int
) -> Callable[[nn.Module, int], bool]:
    """``fits(model, batch)`` for ``convert(auto=True)``: ``step(model, batch)`` under a cap."""

    def fits(model: nn.Module, batch: int) -> bool:
        return step_fits_under_cap(lambda: step(model, batch), extra_bytes)

    return fits
