"""The contract between `DeferredBlockStore` and the generated code: the code looks a
prefix's pending dict up once before a loop and writes every point through it, so the
store must never replace that dict (nor `pending`) — not when it settles blocks, frees
points or ranges, or is cleared for the next run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tempo.core.sdg import TensorId
from tempo.runtime.stores import Layout, MemoryAccountant, array_ops, slot_put, storage_of
from tempo.runtime.stores_deferred import DeferredBlockStore, stack_along


def _store(backend: str) -> DeferredBlockStore:
    select, put, cat = array_ops(backend)

    def alloc(s: tuple[int, ...]) -> object:
        return torch.empty(s) if backend == "torch" else np.empty(s, np.float32)

    def front(x: object, a: int) -> object:
        return torch.movedim(x, a, 0) if backend == "torch" else np.moveaxis(x, a, 0)

    lay = Layout(TensorId(0, 0), 1, (3,), alloc, storage_of(backend), front, cat, select, put,
                 MemoryAccountant(None, str), slot_put(backend))
    return DeferredBlockStore(lay, 4, stack_along(backend))


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_writes_through_a_hoisted_prefix_dict_reach_the_store(backend: str) -> None:
    """Writes through dicts bound once per prefix (as the generated code binds them) are
    read back after every kind of settle and free, and after clear() in the next run."""
    s = _store(backend)
    wrap = (lambda a: torch.from_numpy(a)) if backend == "torch" else (lambda a: a)
    pending = s.pending  # bound once, in the generated code's namespace
    for run in range(2):
        rng = np.random.default_rng(run)
        hoisted = {b: pending[(b,)] for b in range(2)}  # bound once before the loop
        pts = {(b, i): rng.standard_normal(3).astype(np.float32)
               for b in range(2) for i in range(12)}
        for i in range(12):
            for b in range(2):
                hoisted[b][i] = wrap(pts[(b, i)])
            if i == 5:  # settle blocks 0..1 of prefix 0 mid-loop, then keep writing
                np.testing.assert_array_equal(np.asarray(s.read_slice((0,), 0, 6)),
                                              np.stack([pts[(0, k)] for k in range(6)]))
            if i == 8:
                s.pop((1, 0))
                s.pop_range((1,), 1, 4)
        for b in range(2):
            assert s.pending is pending and s.pending[(b,)] is hoisted[b]
        for b, lo in ((0, 0), (1, 4)):
            np.testing.assert_array_equal(np.asarray(s.read_slice((b,), lo, 12)),
                                          np.stack([pts[(b, k)] for k in range(lo, 12)]))
        assert (1, 2) not in s and (1, 4) in s
        s.clear()  # the executor's reset between runs
        assert len(s) == 0 and s.pending is pending
        assert all(s.pending[(b,)] is hoisted[b] for b in range(2))


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_whole_pending_block_is_stacked_into_the_buffer_layout(backend: str) -> None:
    """A block settled whole (its buffer stacked along the stored axis instead of copied
    in) reads, frees and charges as an eager block store's: points (2, 3), stored axis 1."""
    select, put, cat = array_ops(backend)
    made: list[tuple[int, ...]] = []

    def alloc(shape: tuple[int, ...]) -> object:
        made.append(shape)
        return torch.empty(shape) if backend == "torch" else np.empty(shape, np.float32)

    front = (lambda x, a: torch.movedim(x, a, 0)) if backend == "torch" else (
        lambda x, a: np.moveaxis(x, a, 0))
    acct = MemoryAccountant(None, str)
    lay = Layout(TensorId(0, 0), 1, (2, 3), alloc, storage_of(backend), front, cat, select,
                 put, acct)
    s = DeferredBlockStore(lay, 4, stack_along(backend))
    rng = np.random.default_rng(3)
    pts = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(6)]
    wrap = (lambda a: torch.from_numpy(a)) if backend == "torch" else (lambda a: a)
    for i, p in enumerate(pts):
        s[(0, i)] = wrap(p)
    got = s.read_slice((0,), 0, 6)  # block 0 whole (stacked), block 1 partial (copied)
    np.testing.assert_array_equal(np.asarray(got), np.stack(pts))
    buf = s.bufs[((0,), 0)]
    assert tuple(buf.shape) == (2, 4, 3)  # the buffer layout: stored dim at axis 1
    assert made == [(2, 4, 3)]  # allocated for block 1 only: block 0 is the stack itself
    np.testing.assert_array_equal(np.asarray(s[(0, 2)]), pts[2])
    assert sum(n for n, _ in acct.held.values()) == 2 * 2 * 4 * 3 * 4  # both blocks charged
    s.pop_range((0,), 0, 4)
    assert ((0,), 0) not in s.bufs and len(acct.held) == 1 and (0, 4) in s
