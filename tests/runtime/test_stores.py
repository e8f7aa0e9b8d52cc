"""Block and window stores (ARCHITECTURE §5.7): results equal eager torch, memory grows as a
staircase of blocks for a growing history and stays flat in T for a window, and the
accountant's numbers are what the stores hold."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core.dtype import dtypes
from tempo.core.sdg import TensorId
from tempo.runtime.stores import (
    BlockStore,
    CircularStore,
    Layout,
    MemoryAccountant,
    array_ops,
    slot_put,
    storage_of,
)
from tempo.runtime.stores_deferred import DeferredBlockStore, stack_along

D = 16  # floats per point: 64 B


def _program(cfg, T: int, window: int | None, U: int):  # noqa: ANN001, ANN202
    cfg = dataclasses.replace(cfg, enable_gc=True, inc_statify_block_size=U,
                              enable_hybrid_tensorstore=True, enable_inplace_write=True,
                              enable_lazy_slice=True,
                              device_memory_cap_bytes=1 << 30)
    data = torch.randn(T, D, generator=torch.Generator().manual_seed(T))
    ctx = TempoContext(cfg, num_dims=1)
    (t, TT), = ctx.variables_and_bounds
    got: list[torch.Tensor] = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]] * 1.0, (D,), dtypes.float32,
                                  domain=(t,))
        lo = 0 if window is None else ie.max(0, t - window + 1)
        x[lo: t + 1].sum(0).sink_udf(lambda v: got.append(torch.as_tensor(v).clone()))
    exe = ctx.compile({TT: T})
    exe.execute()
    want = torch.stack([data[(0 if window is None else max(0, k - window + 1)): k + 1].sum(0)
                        for k in range(T)])
    torch.testing.assert_close(torch.stack(got), want, rtol=1e-5, atol=1e-5)
    return exe


def _kinds(exe) -> set[str]:  # noqa: ANN001
    return {type(s).__name__ for s in exe.stores.values()}


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_window_store_memory_is_flat_in_T(cfg, backend: str) -> None:
    cfg = dataclasses.replace(cfg, backend=backend)
    peaks = []
    for T in (24, 96):
        exe = _program(cfg, T, window=4, U=8)
        assert "CircularStore" in _kinds(exe)
        peaks.append(exe.memory_stats()["peak_bytes"])
        assert exe.memory_stats()["live_bytes"] == 0
    assert peaks[0] == peaks[1]
    assert peaks[0] <= 2 * 4 * D * 4 + 4 * D * 4  # the 2W ring and a few points in flight


def test_history_store_grows_as_a_staircase_of_blocks(cfg) -> None:
    T, U = 32, 8
    exe = _program(cfg, T, window=None, U=U)
    # a prefix read on torch: the blocks lie in one buffer, still charged block by block
    assert "JoinedBlockStore" in _kinds(exe)
    block = U * D * 4
    lives = [live for live, _host in exe.memory_timeline()]
    levels = sorted({v // block for v in lives})
    assert levels[-1] == T // U  # ends at the whole history ...
    ups = sum(1 for a, b in zip(lives, lives[1:]) if b // block > a // block)
    assert ups == T // U - 1  # ... reached one block at a time, not preallocated
    assert exe.memory_stats()["peak_bytes"] < (T // U + 2) * block  # one cat in flight


def _layout(backend: str, acct: MemoryAccountant) -> Layout:
    select, put, cat = array_ops(backend)
    if backend == "torch":
        def alloc(s: tuple[int, ...]) -> object:
            return torch.empty(s)
    else:
        def alloc(s: tuple[int, ...]) -> object:
            return np.empty(s, np.float32)
    def front(x: object, a: int) -> object:
        return torch.movedim(x, a, 0) if backend == "torch" else np.moveaxis(x, a, 0)

    return Layout(TensorId(0, 0), 0, (2, 3), alloc, storage_of(backend), front, cat, select,
                  put, acct, slot_put(backend))  # (as the executor makes it)


def _block(backend: str, acct: MemoryAccountant, deferred: bool) -> BlockStore:
    lay = _layout(backend, acct)
    return DeferredBlockStore(lay, 4, stack_along(backend)) if deferred else BlockStore(lay, 4)


@pytest.mark.parametrize("deferred", [False, True])
@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_block_store_reads_views_and_frees_blocks(backend: str, deferred: bool) -> None:
    acct = MemoryAccountant(None, str)
    s = _block(backend, acct, deferred)
    pts = [np.full((2, 3), k, np.float32) for k in range(10)]
    for k, p in enumerate(pts):
        s[(k,)] = torch.from_numpy(p) if backend == "torch" else p
    got = np.asarray(s.read_slice((), 2, 9))  # (the deferred store allocates blocks here)
    assert acct.live == 3 * 4 * 6 * 4  # three blocks of four points
    np.testing.assert_array_equal(got, np.stack(pts[2:9]))
    view = s.read_slice((), 4, 7)  # inside one block: a view of it
    np.testing.assert_array_equal(np.asarray(view), np.stack(pts[4:7]))
    for k in range(4):
        s.pop((k,))
    assert acct.live == 2 * 4 * 6 * 4 and (0,) not in s and (5,) in s


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_block_store_writes_in_any_order_and_reopens_freed_blocks(backend: str) -> None:
    """Writes in any order land in their slots, read back as points (slot views made at
    the first point read: torch's one unbind) and as blocks; a freed block reopens with
    fresh views; block reads give the written rows of one or several blocks."""
    acct = MemoryAccountant(None, str)
    s = _block(backend, acct, deferred=False)
    rng = np.random.default_rng(3)
    wrap = (lambda a: torch.from_numpy(a)) if backend == "torch" else (lambda a: a)
    for _ in range(2):  # the second round reopens every block after the first freed it
        pts = [rng.standard_normal((2, 3)).astype(np.float32) for _k in range(11)]
        for k in (5, 0, 3, 10, 1, 2, 4, 7, 6, 9, 8):
            s.write((), k, wrap(pts[k]))
        for k in range(11):
            np.testing.assert_array_equal(np.asarray(s[(k,)]), pts[k])
        (blk, lo, hi), = s.read_blocks((), 5, 7)
        np.testing.assert_array_equal(np.asarray(blk)[lo:hi], np.stack(pts[5:7]))
        got = s.read_blocks((), 2, 11)
        assert [(a, b) for _, a, b in got] == [(2, 4), (0, 4), (0, 3)]
        np.testing.assert_array_equal(np.concatenate([np.asarray(b)[lo:hi] for b, lo, hi in got]),
                                      np.stack(pts[2:11]))
        s.pop_range((), 0, 11)
        assert acct.live == 0 and len(s) == 0


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_deferred_block_store_copies_at_the_first_read(backend: str) -> None:
    acct = MemoryAccountant(None, str)
    s = _block(backend, acct, deferred=True)
    assert isinstance(s, DeferredBlockStore)
    pts = [np.full((2, 3), k, np.float32) for k in range(12)]
    wrap = (lambda a: torch.from_numpy(a)) if backend == "torch" else (lambda a: a)
    for k in (0, 1, 2, 3, 4, 6, 5, 8, 9, 10, 11):  # block 1 out of order; 7 never written
        s.write((), k, wrap(pts[k]))
    assert acct.live == 0 and len(s) == 11  # nothing copied, no block allocated yet
    assert s[(6,)] is not None and np.asarray(s[(6,)])[0, 0] == 6  # the pending value
    s.pop_range((), 8, 12)  # block 2 freed before any read: never copied nor allocated
    assert acct.live == 0 and not s.pending[()].keys() & {8, 9, 10, 11}
    np.testing.assert_array_equal(np.asarray(s.read_slice((), 1, 4)), np.stack(pts[1:4]))
    assert acct.live == 4 * 6 * 4  # block 0 only: the read settled its block
    got = np.asarray(s.read_slice((), 4, 7))  # one stack for 4, 5, 6 (written 4, 6, 5)
    np.testing.assert_array_equal(got, np.stack(pts[4:7]))
    assert acct.live == 2 * 4 * 6 * 4 and (6,) in s and (7,) not in s
    s.pop_range((), 0, 8)
    assert acct.live == 0 and len(s) == 0 and not s.pending[()]


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_deferred_block_store_settles_a_backward_run_and_scattered_points(backend: str
                                                                          ) -> None:
    """A loop running backwards (GAE's returns) writes 7, 6, ..., 0: one stack per block;
    points written apart are copied one by one; a point freed unread is never copied."""
    acct = MemoryAccountant(None, str)
    s = _block(backend, acct, deferred=True)
    pts = [np.full((2, 3), k, np.float32) for k in range(8)]
    wrap = (lambda a: torch.from_numpy(a)) if backend == "torch" else (lambda a: a)
    for k in range(7, -1, -1):
        s[(k,)] = wrap(pts[k])
    np.testing.assert_array_equal(np.asarray(s.read_slice((), 0, 8)), np.stack(pts))
    s.pop_range((), 0, 8)
    for k in (0, 2, 3):  # block 0 with a gap at 1
        s.write((), k, wrap(pts[k]))
    s.pop((3,))
    got = s.read_blocks((), 0, 3)
    assert len(got) == 1 and got[0][1:] == (0, 3)
    blk = np.asarray(got[0][0])
    np.testing.assert_array_equal(blk[[0, 2]], np.stack([pts[0], pts[2]]))
    assert (3,) not in s and (2,) in s and acct.live == 4 * 6 * 4


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_circular_store_windows_match_a_full_history(backend: str) -> None:
    acct = MemoryAccountant(None, str)
    W = 5
    s = CircularStore(_layout(backend, acct), W)
    rng = np.random.default_rng(1)
    pts = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(40)]
    for k, p in enumerate(pts):
        s.write((), k, torch.from_numpy(p) if backend == "torch" else p)
        lo = max(0, k - W + 1)
        np.testing.assert_array_equal(np.asarray(s.read_slice((), lo, k + 1)),
                                      np.stack(pts[lo: k + 1]))
        if k >= W - 1:
            s.pop((k - W + 1,))
    assert acct.live == 2 * W * 6 * 4  # flat: one 2W buffer whatever the length


def test_a_torch_store_front_gives_size_1_dims_their_contiguous_stride() -> None:
    """A (B, 1, T, P) block read as (T, B, 1, P) and permuted back to (B, T, 1, P), as
    the E5 learner reads its rollout, has row-major strides, so torch.matmul takes its
    fast path; the values are the buffer's, and a write through the front reaches it."""
    from tempo.runtime.backends.torch import TorchBackend

    buf = torch.randn(4, 1, 5, 3)
    front = TorchBackend.move_to_front(buf, 2)
    assert torch.equal(front, buf.movedim(2, 0))
    read = front[1:5].permute(1, 0, 2, 3)
    assert read.stride() == (15, 3, 3, 1)  # movedim alone leaves (15, 3, 15, 1)
    w = torch.randn(3, 2)
    np.testing.assert_allclose(torch.matmul(read, w).numpy(),
                               buf.numpy().transpose(0, 2, 1, 3)[:, 1:5] @ w.numpy(),
                               rtol=1e-6, atol=1e-6)
    front[2].fill_(7.0)
    assert bool((buf[:, :, 2] == 7.0).all())


@pytest.mark.parametrize("shape", [(2, 3), ()])
@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_block_writes_make_no_slot_views_and_reach_views_handed_out(backend: str,
                                                                    shape: tuple) -> None:
    """A write is one assignment into the block's front (`slot_put`): no slot view is made
    for it (E1 made and freed 2,048 a run only to write through each once). A point read
    then makes the block's views; a later write into a slot whose view was handed out
    shows through it, and (torch) moves the version `region_folds.Prepared` checks."""
    acct = MemoryAccountant(None, str)
    if backend == "torch":
        def alloc(s: tuple[int, ...]) -> object:
            return torch.empty(s)
    else:
        def alloc(s: tuple[int, ...]) -> object:
            return np.empty(s, np.float32)
    lay = _layout(backend, acct)
    lay = Layout(TensorId(0, 0), 0, shape, alloc, storage_of(backend), lay.move, lay.cat,
                 lay.select, lay.put, acct, slot_put(backend))
    s = BlockStore(lay, 4)
    rng = np.random.default_rng(5)
    wrap = (lambda a: torch.from_numpy(a)) if backend == "torch" else (lambda a: a)
    pts = [rng.standard_normal(shape).astype(np.float32) for _ in range(6)]
    for k in (4, 0, 2, 1, 5, 3):
        s.write((), k, wrap(pts[k]))
    assert all(v is None for slots in s.slots.values() for v in slots)  # no views made
    got = np.concatenate([np.asarray(b)[lo:hi] for b, lo, hi in s.read_blocks((), 0, 6)])
    np.testing.assert_array_equal(got, np.stack(pts))
    view = s[(1,)]
    np.testing.assert_array_equal(np.asarray(view), pts[1])
    version = view._version if backend == "torch" else None
    new = rng.standard_normal(shape).astype(np.float32)
    s.write((), 1, wrap(new))
    np.testing.assert_array_equal(np.asarray(view), new)
    if backend == "torch":
        assert view._version > version
    s.pop_range((), 0, 6)
    assert acct.live == 0 and len(s) == 0
