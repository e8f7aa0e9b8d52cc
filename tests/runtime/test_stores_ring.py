"""Ring stores (runtime/stores_ring.py): a window store of exactly the W points its readers
can still need, chosen over a block store whenever it holds fewer points (T = 2W
included), giving the same results as the block store and as eager torch."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.bench.baselines.gpt2_core import Gpt2CoreConfig, init_weights, reference_decode
from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.systems.gpt2_tempo import TempoGpt2Decoder
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoMemoryError
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
from tempo.runtime.stores_ring import RingStore

D = 8


def _layout(backend: str, acct: MemoryAccountant) -> Layout:
    select, put, cat = array_ops(backend)
    if backend == "torch":
        def alloc(s: tuple[int, ...]) -> object:
            return torch.empty(s)

        def front(x: object, a: int) -> object:
            return torch.movedim(x, a, 0)  # type: ignore[arg-type]
    else:
        def alloc(s: tuple[int, ...]) -> object:
            return np.empty(s, np.float32)

        def front(x: object, a: int) -> object:
            return np.moveaxis(x, a, 0)  # type: ignore[arg-type]

    return Layout(TensorId(0, 0), 0, (2, 3), alloc, storage_of(backend), front, cat, select,
                  put, acct, slot_put(backend))  # (as the executor makes it)


def _rows(blocks: list) -> np.ndarray:
    return np.concatenate([np.asarray(b)[s:e] for b, s, e in blocks])


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_ring_reads_match_a_full_history_in_W_points(backend: str) -> None:
    acct = MemoryAccountant(None, str)
    W, V = 5, 2
    ring = RingStore(_layout(backend, acct), W, block=V)
    rot = RingStore(_layout(backend, acct), W, block=V, rotated=True)
    pts = [np.random.default_rng(k).standard_normal((2, 3)).astype(np.float32)
           for k in range(23)]
    for k, p in enumerate(pts):
        for s in (ring, rot):
            s.write((), k, torch.from_numpy(p) if backend == "torch" else p)
        lo = max(0, k - W + 1)
        want = np.stack(pts[lo: k + 1])
        np.testing.assert_array_equal(np.asarray(ring.read_slice((), lo, k + 1)), want)
        blocks = ring.read_blocks((), lo, k + 1)
        assert all(e - s <= V for _, s, e in blocks)
        np.testing.assert_array_equal(_rows(blocks), want)  # in order, no copy
        got = _rows(rot.read_blocks((), lo, k + 1))  # the whole ring: slot order
        assert sorted(map(tuple, got.reshape(len(got), -1))) == sorted(
            map(tuple, want.reshape(len(want), -1)))
        np.testing.assert_array_equal(np.asarray(ring[(k - 1,)]) if k else pts[0],
                                      pts[k - 1] if k else pts[0])
        if k >= W - 1:
            ring.pop((k - W + 1,))
            rot.pop((k - W + 1,))
    assert acct.live == 2 * W * 6 * 4  # two rings of W points, whatever the length
    with pytest.raises(TempoMemoryError, match="outside the 5 newest"):
        ring.read_blocks((), 10, 20)
    ring.pop_range((), 0, 23)
    assert acct.live == W * 6 * 4 and len(ring) == 0


@pytest.mark.parametrize("slack", [1, 2, 5])
@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_compacting_store_of_W_plus_slack_keeps_in_order_windows(backend: str, slack: int
                                                                 ) -> None:
    """An untiled window read needs its W points as one in-order view: W + slack slots,
    the newest W-1 moved to the front in non-overlapping chunks when full."""
    acct = MemoryAccountant(None, str)
    W = 5
    s = CircularStore(_layout(backend, acct), W, slack=slack)
    pts = [np.random.default_rng(k).standard_normal((2, 3)).astype(np.float32)
           for k in range(31)]
    for k, p in enumerate(pts):
        s.write((), k, torch.from_numpy(p) if backend == "torch" else p)
        lo = max(0, k - W + 1)
        np.testing.assert_array_equal(np.asarray(s.read_slice((), lo, k + 1)),
                                      np.stack(pts[lo: k + 1]))
        if k >= W - 1:
            s.pop((k - W + 1,))
    assert acct.live == (W + slack) * 6 * 4


def _window_program(cfg: ExecutionConfig, T: int, W: int, reduce: str):  # noqa: ANN202
    """y[t] = reduce(x[max(0,t-W+1):t+1]) for a source x; the executor and the results."""
    data = torch.randn(T, D, generator=torch.Generator().manual_seed(T))
    ctx = TempoContext(cfg, num_dims=1)
    (t, TT), = ctx.variables_and_bounds
    got: list[torch.Tensor] = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]] * 1.0, (D,), dtypes.float32,
                                  domain=(t,))
        win = x[ie.max(0, t - W + 1): t + 1]
        y = win.sum(0) if reduce == "sum" else win.max(0)[0]
        y.sink_udf(lambda v: got.append(torch.as_tensor(v).clone()))
    exe = ctx.compile({TT: T})
    exe.execute()
    windows = [data[max(0, k - W + 1): k + 1] for k in range(T)]
    want = torch.stack([w.sum(0) if reduce == "sum" else w.max(0)[0] for w in windows])
    return exe, torch.stack(got), want


def _cfg(cfg: ExecutionConfig, backend: str, U: int, gc: bool = True) -> ExecutionConfig:
    return dataclasses.replace(cfg, backend=backend, enable_gc=gc, inc_statify_block_size=U,
                               enable_statifying_incrementalization=True,
                               enable_hybrid_tensorstore=True, enable_inplace_write=True,
                               enable_lazy_slice=True, device_memory_cap_bytes=1 << 30)


@pytest.mark.parametrize("reduce", ["sum", "max"])
@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_ring_at_T_2W_equals_the_block_store(cfg, backend: str, reduce: str) -> None:
    """At T = 2W with U = T a block store holds 2W points, the ring W: the ring is chosen
    (rotated for the order-free sum, in order for the max) and equals the block store's
    run (window stores off) and eager torch."""
    T, W = 8, 4
    exe, got, want = _window_program(_cfg(cfg, backend, U=T), T, W, reduce)
    rings = [s for s in exe.stores.values() if isinstance(s, RingStore)]
    assert len(rings) == 1 and rings[0].window == W and rings[0].rotated == (reduce == "sum")
    blk, got_b, _ = _window_program(_cfg(cfg, backend, U=T, gc=False), T, W, reduce)
    assert any(isinstance(s, BlockStore) for s in blk.stores.values())
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got, got_b, rtol=1e-6, atol=1e-6)
    peak = exe.memory_stats()["peak_bytes"]
    assert peak is not None and W * D * 4 <= peak < 2 * W * D * 4  # the block: 2W points


@pytest.mark.parametrize(("backend", "U"), [("torch", 256), ("torch", 2), ("numpy", 3)])
def test_gpt2_window_decode_from_rings_equals_the_reference(backend: str, U: int) -> None:
    """Keys and values in rings of W (blocks of U within them, rotated: attention does
    not mind the order) give the float64 no-cache reference's decode."""
    cfg = dict(n_layers=2, n_heads=2, d_model=16, d_ff=32, batch=2, seq_len=11,
               attn="window", window=4, block=U)
    c = Gpt2CoreConfig.from_dict(cfg)
    w = init_weights(c, "torch")
    x0 = np.random.default_rng(0).standard_normal((2, 16)).astype(np.float32)
    dec = TempoGpt2Decoder(cfg, DeviceMemoryAccountant(), w, x0, backend=backend)
    dec.compile()
    dec.run()
    rings = [s for s in dec.exe.stores.values() if isinstance(s, RingStore)]
    assert len(rings) == 2 and all(r.window == 4 and r.rotated for r in rings)
    assert dec.out is not None
    torch.testing.assert_close(dec.out.double(), torch.from_numpy(reference_decode(w, x0, c)),
                               atol=1e-4, rtol=1e-4)
