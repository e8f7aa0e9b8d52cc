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


def return_freed_memory_to_os() -> None:
    """Ask glibc to mmap tensors >= 64 KiB so frees really shrink the address space."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 65536)  # M_MMAP_THRESHOLD
        libc.malloc_trim(0)


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
    text = str(err).lower()
    return isinstance(err, MemoryError) or any(
        k in text for k in ("can't allocate", "out of memory", "allocat", "bad_alloc")
    )


def step_fits_under_cap(step: Callable[[], None], extra_bytes: int) -> bool:
    """Run ``step`` under an address-space cap; False on a CPU OOM."""
    return_freed_memory_to_os()
    try:
        with address_space_cap(extra_bytes):
            step()
        return True
    except (RuntimeError, MemoryError) as err:
        if not is_oom(err):
            raise
        return False
    finally:
        return_freed_memory_to_os()


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
