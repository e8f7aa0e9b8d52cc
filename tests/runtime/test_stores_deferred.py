"""The contract between `DeferredBlockStore` and the generated code: the code looks a
prefix's pending dict up once before a loop and writes every point through it, so the
store must never replace that dict (nor `pending`) — not when it settles blocks, frees
points or ranges, or is cleared for the next run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tempo.core.sdg import TensorId
from tempo.runtime.stores import Layout, MemoryAccountant, array_ops, storage_of
from tempo.runtime.stores_deferred import DeferredBlockStore, stack_along


def _store(backend: str) -> DeferredBlockStore:
    select, put, cat = array_ops(backend)

    def alloc(s: tuple[int, ...]) -> object:
        return torch.empty(s) if backend == "torch" else np.empty(s, np.float32)

    def front(x: object, a: int) -> object:
        return torch.movedim(x, a, 0) if backend == "torch" else np.moveaxis(x, a, 0)

    lay = Layout(TensorId(0, 0), 1, (3,), alloc, storage_of(backend), front, cat, select, put,
                 MemoryAccountant(None, str))
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
