"""Joined block stores (runtime/stores_joined.py): a history read only as growing prefixes
`k[0:t+1]` keeps its blocks end to end in one buffer on host torch, so each step's tiled
attention reads one view of it and makes as many torch calls at t = T-1 (five blocks) as
in the first block (the per-block path made 2n + 6); values equal eager torch; memory is
still charged block by block, and other reads, backends and devices keep separate blocks.
A history in a ring of T slots (T not a multiple of U) is read as one view per run too."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.ops_tiled import TiledAttentionOp
from tempo.core.sdg import TensorId
from tempo.runtime.stores import Layout, MemoryAccountant, array_ops, slot_put, storage_of
from tempo.runtime.stores_deferred import stack_along
from tempo.runtime.stores_joined import JoinedBlockStore, JoinedDeferredBlockStore

T_, U_, H, DH = 40, 8, 2, 4  # five blocks
RNG = np.random.default_rng(11)
Q, K, V = (RNG.standard_normal((T_, H, DH)).astype(np.float32) for _ in range(3))
SCALE = 1.0 / math.sqrt(DH)


def _cfg(tmp_path: Any, backend: str = "torch", dev: str = "cpu", tracked: bool = True
         ) -> ExecutionConfig:
    return dataclasses.replace(
        ExecutionConfig.test_cfg(), backend=backend, dev=dev, path=str(tmp_path) + "/",
        enable_statifying_incrementalization=True, inc_statify_block_size=U_,
        enable_hybrid_tensorstore=True, enable_inplace_write=True, enable_lazy_slice=True,
        enable_gc=True, executor_debug_mode=False, enable_point_store_fallback=True,
        device_memory_cap_bytes=(1 << 30) if tracked else None)


def _decode(cfg: ExecutionConfig, window: int | None = None, steps: int = T_
            ) -> tuple[torch.Tensor, Any]:
    """softmax(q k[lo:t+1]') v[lo:t+1] at every t, as a user writes it."""
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: list[torch.Tensor] = []

    def src(a: np.ndarray, shape: tuple[int, ...]) -> RT:
        data = torch.from_numpy(a)
        return RT.source_with_ts_udf(lambda ts: data[ts[t]].reshape(shape), shape,
                                     dtypes.float32, domain=(t,))

    with ctx:
        q, k, v = src(Q, (H, 1, DH)), src(K, (H, DH)), src(V, (H, DH))
        lo = 0 if window is None else ie.max(0, t - window + 1)
        p = ((q @ k[lo: t + 1].permute((1, 2, 0))) * SCALE).softmax(-1)
        o = p.unsqueeze(-2) @ v[lo: t + 1].permute((1, 0, 2))
        o.sink_udf(lambda x: got.append(torch.as_tensor(np.asarray(x)).clone()))
    exe = ctx.compile({T: steps})
    exe.execute()
    return torch.stack(got).reshape(steps, H, DH), exe


def _eager(window: int | None = None, steps: int = T_) -> torch.Tensor:
    q, k, v = (torch.from_numpy(a) for a in (Q, K, V))
    outs = []
    for t in range(steps):
        lo = 0 if window is None else max(0, t - window + 1)
        s = torch.einsum("hd,shd->hs", q[t], k[lo: t + 1]) * SCALE
        outs.append(torch.einsum("hs,shd->hd", torch.softmax(s, -1), v[lo: t + 1]))
    return torch.stack(outs)


def _kinds(exe: Any) -> set[str]:
    return {type(s).__name__ for s in exe.stores.values()}


class _Count(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None
                           ) -> Any:
        self.n += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(("tracked", "steps", "store"), [
    (True, T_, "JoinedBlockStore"), (False, T_, "JoinedDeferredBlockStore"),
    (True, T_ - 3, "RingStore")])  # (T - 3 slots hold fewer than 5 blocks of U: a ring)
def test_causal_attention_reads_the_history_as_one_view(tracked: bool, steps: int,
                                                        store: str, tmp_path: Any) -> None:
    cfg = _cfg(tmp_path, tracked=tracked)
    ctx_exe: list[Any] = []
    calls: list[int] = []
    got, exe = _decode(cfg, steps=steps)
    torch.testing.assert_close(got, _eager(steps=steps), rtol=1e-5, atol=1e-6)
    assert store in _kinds(exe)
    (aid,) = [i for i, op in exe.sdg.ops.items() if isinstance(op, TiledAttentionOp)]
    ns = exe.generated.namespace
    kernel = ns[f"k{aid}"]

    def counted(*args: Any) -> Any:
        with _Count() as c:
            out = kernel(*args)
        calls.append(c.n)
        ctx_exe.append(args)
        return out

    ns[f"k{aid}"] = counted
    exe.reset()
    exe.execute()  # counting the torch calls of each step's attention kernel
    assert len(calls) == steps
    # one (view, start, stop) per read, the same buffer at every step
    assert all(len(a[1]) == 1 and len(a[2]) == 1 for a in ctx_exe)
    assert len({a[1][0][0].data_ptr() for a in ctx_exe}) == 1
    # torch calls per step do not grow with the history (old: 12 in one block, 46 in five)
    assert max(calls[1:]) == min(calls[1:]), calls


def test_joined_decode_memory_is_a_staircase_of_blocks(tmp_path: Any) -> None:
    _, exe = _decode(_cfg(tmp_path))
    block = U_ * H * DH * 4
    kv = [s for s in exe.stores.values() if type(s).__name__ == "JoinedBlockStore"]
    assert len(kv) == 2  # keys and values
    lives = [live for live, _host in exe.memory_timeline()]
    # both stores open a block every U steps: the live bytes step up 2 blocks at a time
    steps = [b - a for a, b in zip(lives, lives[1:]) if b - a >= block]
    assert steps == [2 * block] * (-(-T_ // U_) - 1), steps
    assert max(lives) < 2 * -(-T_ // U_) * block + 4 * block
    assert exe.memory_stats()["live_bytes"] == 0


@pytest.mark.parametrize("where", ["window", "numpy", "fake-gpu"])
def test_other_reads_backends_and_devices_keep_separate_blocks(where: str, tmp_path: Any
                                                               ) -> None:
    window = 12 if where == "window" else None  # a window wider than U: blocks, not a ring
    cfg = _cfg(tmp_path, backend="numpy" if where == "numpy" else "torch",
               dev="fake-gpu" if where == "fake-gpu" else "cpu")
    got, exe = _decode(cfg, window)
    torch.testing.assert_close(got, _eager(window), rtol=1e-5, atol=1e-6)
    kinds = _kinds(exe)
    assert not any(k.startswith("Joined") for k in kinds), kinds


def _layout(acct: MemoryAccountant) -> Layout:
    select, put, cat = array_ops("torch")
    return Layout(TensorId(0, 0), 0, (2, 3), torch.empty, storage_of("torch"),
                  lambda x, a: torch.movedim(x, a, 0), cat, select, put, acct,
                  slot_put("torch"))  # (as the executor makes it: stored dim at axis 1)


@pytest.mark.parametrize("deferred", [False, True])
def test_joined_store_views_and_charges(deferred: bool) -> None:
    acct = MemoryAccountant(None, str)
    lay = _layout(acct)
    s = (JoinedDeferredBlockStore(lay, 4, stack_along("torch"), 10) if deferred
         else JoinedBlockStore(lay, 4, 10))
    pts = [torch.full((2, 3), float(k)) for k in range(10)]
    block = 4 * 6 * 4
    lives = []
    for k, p in enumerate(pts):
        s[(k,)] = p
        s.read_blocks((), 0, k + 1)  # (the deferred store copies points in here)
        lives.append(acct.live)
    assert lives == [block] * 4 + [2 * block] * 4 + [3 * block] * 2  # block by block
    ((buf, lo, hi),) = s.read_blocks((), 0, 10)
    assert (lo, hi) == (0, 10) and buf.shape == (12, 2, 3)  # whole blocks of the extent
    torch.testing.assert_close(buf[:10], torch.stack(pts))
    span = s.read_slice((), 2, 9)  # across three blocks: a view, not a cat
    torch.testing.assert_close(span, torch.stack(pts[2:9]))
    assert span._base is buf._base
    assert s[(5,)].tolist() == pts[5].tolist()
    for k in range(8):
        s.pop((k,))
    assert acct.live == 3 * block  # a block freed early stays charged: its pages stay
    for k in range(8, 10):
        s.pop((k,))
    assert acct.live == 0 and not s.arenas and not acct.held
    s[(0,)] = pts[1]  # opens a new buffer, charged again
    s.read_blocks((), 0, 1)
    assert acct.live == block
    s.clear()
    assert acct.live == 0 and not acct.held


def test_whole_blocks_settled_at_once_land_in_the_buffer() -> None:
    acct = MemoryAccountant(None, str)
    s = JoinedDeferredBlockStore(_layout(acct), 4, stack_along("torch"), 8)
    pts = [torch.full((2, 3), float(k)) for k in range(8)]
    for k, p in enumerate(pts):
        s[(k,)] = p
    ((buf, lo, hi),) = s.read_blocks((), 0, 8)  # two whole blocks settled at this read
    assert (lo, hi) == (0, 8) and acct.live == 2 * 4 * 6 * 4
    torch.testing.assert_close(buf, torch.stack(pts))
