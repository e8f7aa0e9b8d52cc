"""Swapping (enable_swap): the schedule offloads points idle between stages and fetches
them before their reads (prefetching ahead); under a device cap points also move to the
host pool and back; results equal eager torch, and the device peak stays under the cap."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoMemoryError
from tempo.runtime.stores import BlockStore
from tempo.runtime.swap_blocks import SwapBlockStore

T, D = 12, 256  # points of 1 KiB


def _run(cfg, cap: int | None, swap: bool, backend: str = "torch"):  # noqa: ANN001, ANN202
    return _stage_program(cfg, backend, device_memory_cap_bytes=cap, enable_swap=swap)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_swap_keeps_the_device_under_a_cap_the_program_needs_twice(cfg, backend: str) -> None:
    plain = _run(cfg, 1 << 30, swap=False, backend=backend).memory_stats()
    assert plain["peak_bytes"] >= T * D * 4  # every x point is alive before the reads
    cap = plain["peak_bytes"] // 2
    with pytest.raises(TempoMemoryError):
        _run(cfg, cap, swap=False, backend=backend)
    stats = _run(cfg, cap, swap=True, backend=backend).memory_stats()
    assert stats["peak_bytes"] <= cap
    assert stats["swapped_bytes"] >= T * D * 4 // 2 - D * 4 * 2
    assert stats["fetched_bytes"] > 0 and stats["host_peak_bytes"] > 0
    assert stats["host_live_bytes"] == 0 and stats["live_bytes"] == 0


def _stage_program(cfg, backend: str = "torch", **swap):  # noqa: ANN001, ANN202
    """x is made in a loop over t and read backwards in a later loop: a gap the schedule
    swaps across. Returns the executor (results checked against eager torch)."""
    cfg = dataclasses.replace(cfg, backend=backend, enable_gc=True, swap_bytes_min=0, **swap)
    data = torch.randn(T, D, generator=torch.Generator().manual_seed(4))
    got: list[torch.Tensor] = []
    ctx = TempoContext(cfg, num_dims=1)
    (t, TT), = ctx.variables_and_bounds
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]] * 1.0, (D,), dtypes.float32,
                                  domain=(t,))
        y = (x * 3.0).exp()
        (y[TT - 1 - t] * 2.0).sink_udf(lambda v: got.append(torch.as_tensor(v).clone()))
    exe = ctx.compile({TT: T})
    exe.execute()
    torch.testing.assert_close(torch.stack(got), (data * 3.0).exp().flip(0) * 2.0)
    return exe


def _lines(text: str, word: str) -> list[int]:
    return [k for k, line in enumerate(text.splitlines()) if line.strip().startswith(word)]


@pytest.mark.parametrize("backend", ["torch", "numpy", "jax"])
def test_schedule_offloads_after_the_producer_and_prefetches_before_the_read(
        cfg, backend: str) -> None:
    exe = _stage_program(cfg, backend, enable_swap=True,
                         runtime_tensor_prefetch_amount_point=2)
    text = exe.schedule_text().split("# generated")[0]
    (offload,), fetches = _lines(text, "offload"), _lines(text, "fetch")
    (prefetch,) = _lines(text, "prefetch")
    (exp,), (_, read) = _lines(text, "exp#"), _lines(text, "mul#")
    assert exp < offload < fetches[0] < read < prefetch  # produce, offload, fetch, read
    stats = exe.memory_stats()
    assert stats["swapped_bytes"] == T * D * 4 == stats["fetched_bytes"]
    assert stats["demand_fetched_bytes"] == 0  # every point was back before its read
    assert stats["prefetched_bytes"] == (T - 2) * D * 4  # all but the first two reads
    assert stats["peak_bytes"] <= 5 * D * 4  # a few points, not the T the plain run keeps
    assert stats["host_live_bytes"] == 0 == stats["live_bytes"]


def test_prefetch_amount_zero_fetches_at_the_read(cfg) -> None:
    stats = _stage_program(cfg, enable_swap=True,
                           runtime_tensor_prefetch_amount_point=0).memory_stats()
    assert stats["swapped_bytes"] == T * D * 4 == stats["fetched_bytes"]
    assert stats["prefetched_bytes"] == 0 == stats["demand_fetched_bytes"]


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_cap_of_three_points_is_honoured(cfg, backend: str) -> None:
    plain = _stage_program(cfg, backend, device_memory_cap_bytes=1 << 30).memory_stats()
    assert plain["peak_bytes"] >= T * D * 4 and plain["swapped_bytes"] == 0
    cap = 3 * D * 4 + 64
    with pytest.raises(TempoMemoryError):
        _stage_program(cfg, backend, device_memory_cap_bytes=cap)
    stats = _stage_program(cfg, backend, device_memory_cap_bytes=cap,
                           enable_swap=True).memory_stats()
    assert stats["peak_bytes"] <= cap
    # the plan's offloads run under pressure only: the first points made stay while
    # there is room (the cap holds three), every later one goes
    assert T * D * 4 > stats["swapped_bytes"] >= (T - 3) * D * 4
    # prefetches that would not fit are skipped, so nothing fetched is pushed out again
    # before its read: every x point comes back once, by the fetch before its read (with
    # swap_bytes_min=0 the swapper also moves a few scalars under pressure, 4 B each)
    assert 0 <= stats["swapped_bytes"] - stats["fetched_bytes"] < D * 4
    assert stats["demand_fetched_bytes"] < D * 4


def _block_program(cfg, total: bool = True, **kw):  # noqa: ANN001, ANN202
    """x is written point by point into a block store (range reads ask for one) and read
    again in a later loop that reads it backwards, one-point ranges, and (`total`) as a
    whole range: complete blocks are idle on the device in between. Results against
    eager torch; returns the executor."""
    cfg = dataclasses.replace(cfg, enable_gc=True, swap_bytes_min=0, enable_hybrid_tensorstore=True,
                              enable_inplace_write=True, enable_lazy_slice=True,
                              inc_statify_block_size=4, **kw)
    data = torch.randn(T, D, generator=torch.Generator().manual_seed(6))
    back: list[torch.Tensor] = []
    whole: list[torch.Tensor] = []
    ctx = TempoContext(cfg, num_dims=1)
    (t, TT), = ctx.variables_and_bounds
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]] * 1.0, (D,), dtypes.float32,
                                  domain=(t,)).exp()
        (x[TT - 1 - t:TT - t] * 2.0).sum(0).sink_udf(
            lambda v: back.append(torch.as_tensor(v).clone()))
        if total:
            (x[0:TT] * 0.5).sum(0).sink_udf(lambda v: whole.append(torch.as_tensor(v).clone()))
    exe = ctx.compile({TT: T})
    exe.execute()
    e = data.exp()
    torch.testing.assert_close(torch.stack(back), e.flip(0) * 2.0)
    if total:
        torch.testing.assert_close(whole[-1], (e * 0.5).sum(0))
    return exe


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_blocks_of_a_block_store_go_to_the_host_and_back(cfg, backend: str) -> None:
    plain = _block_program(cfg, backend=backend, device_memory_cap_bytes=1 << 30)
    (store,) = [s for s in plain.stores.values() if isinstance(s, BlockStore)]
    assert store.block == 4 and plain.memory_stats()["swapped_bytes"] == 0
    peak = plain.memory_stats()["peak_bytes"]
    assert peak >= T * D * 4  # every block alive before the reads
    for total in (True, False):
        swapped = _block_program(cfg, total, backend=backend, enable_swap=True,
                                 runtime_tensor_prefetch_amount_block=1)
        assert [s for s in swapped.stores.values() if isinstance(s, SwapBlockStore)]
        text = swapped.schedule_text().split("# generated")[0]
        assert _lines(text, "offload") and _lines(text, "prefetch"), text
        stats = swapped.memory_stats()
        # each block goes once, by the schedule, and is back before every read
        assert stats["swapped_bytes"] == T * D * 4 == stats["fetched_bytes"]
        assert stats["demand_fetched_bytes"] == 0
        assert stats["host_live_bytes"] == 0 == stats["live_bytes"]
        if not total:  # read backwards a point at a time: the next block comes early
            assert stats["prefetched_bytes"] == T * D * 4 - 4 * D * 4
            assert stats["peak_bytes"] < peak // 2


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_cap_below_the_blocks_is_honoured_by_swapping_blocks(cfg, backend: str) -> None:
    """Under a cap, blocks shrink to a 32nd of it (here: one point) and move to the host
    under pressure too; without swap the same cap fails."""
    cap = T * D * 4 // 2
    with pytest.raises(TempoMemoryError):
        _block_program(cfg, False, backend=backend, device_memory_cap_bytes=cap)
    exe = _block_program(cfg, False, backend=backend, device_memory_cap_bytes=cap,
                         enable_swap=True, runtime_tensor_prefetch_amount_block=0)
    (store,) = [s for s in exe.stores.values() if isinstance(s, SwapBlockStore)]
    assert store.block == 1
    stats = exe.memory_stats()
    assert stats["peak_bytes"] <= cap and stats["swapped_bytes"] >= T * D * 4 // 2
    assert stats["host_live_bytes"] == 0 == stats["live_bytes"]


def test_offload_waits_for_a_near_read_of_the_previous_point(cfg) -> None:
    """x[t-1] is read in the loop that makes x: each point goes to the host one iteration
    later, and still comes back before the backward loop reads it."""
    cfg = dataclasses.replace(cfg, enable_gc=True, swap_bytes_min=0, enable_swap=True,
                              runtime_tensor_prefetch_amount_point=1)
    data = torch.randn(T, D, generator=torch.Generator().manual_seed(5))
    near: list[torch.Tensor] = []
    far: list[torch.Tensor] = []
    ctx = TempoContext(cfg, num_dims=1)
    (t, TT), = ctx.variables_and_bounds
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]] * 1.0, (D,), dtypes.float32,
                                  domain=(t,))
        y = x.exp()
        prev = RT.placeholder((D,), dtypes.float32, domain=(t,))
        prev[t.symb_eq(0)] = RT.zeros((D,))
        prev[True] = y[t - 1]
        (y + prev).sink_udf(lambda v: near.append(torch.as_tensor(v).clone()))
        (y[TT - 1 - t] * 2.0).sink_udf(lambda v: far.append(torch.as_tensor(v).clone()))
    exe = ctx.compile({TT: T})
    exe.execute()
    e = data.exp()
    torch.testing.assert_close(torch.stack(near), e + torch.cat([torch.zeros(1, D), e[:-1]]))
    torch.testing.assert_close(torch.stack(far), e.flip(0) * 2.0)
    text = exe.schedule_text().split("# generated")[0]
    assert any(line.strip().startswith("offload") and "- 1)]" in line
               for line in text.splitlines()), text
    stats = exe.memory_stats()
    assert stats["swapped_bytes"] >= (T - 1) * D * 4
    assert stats["demand_fetched_bytes"] == 0


@pytest.mark.parametrize("backend", ["torch", "numpy"])
@pytest.mark.parametrize("steps", [5, 7])
def test_swapped_blocks_of_a_backward_recurrence_read_back_their_values(
        cfg, backend: str, steps: int) -> None:
    """Returns computed backwards (`g[t] = r[t] + 0.5 g[t+1]`), read whole by a sink, with
    every block the schedule offloads making its round trip (no cap: the plan runs as
    placed). A block fetched back must be read from its new buffer — reads from the
    buffer it left gave 1e21-sized garbage — and a block written last point first is
    complete only once all its points are written."""
    import numpy as np

    r_np = np.arange(1, steps + 1, dtype=np.float32)
    want = np.zeros(steps, np.float32)
    acc = np.float32(0)
    for k in reversed(range(steps)):
        acc = r_np[k] + np.float32(0.5) * acc
        want[k] = acc
    from tempo.core.configs import ExecutionConfig

    ctx = TempoContext(ExecutionConfig(dev="cpu", backend=backend, path=cfg.path,
                                       enable_swap=True, swap_bytes_min=1), num_dims=1)
    ((t, T_),) = ctx.variables_and_bounds
    got: list = []
    with ctx:
        r = RT.source_with_ts_udf(lambda ts: r_np[ts[t]], (), dtypes.float32, domain=(t,))
        g = RT.placeholder((), dtypes.float32, domain=(t,))
        g[T_ - 1] = r[T_ - 1]
        g[True] = r + 0.5 * g[t + 1]
        g[0:T_].sink_udf(lambda v: got.append(np.asarray(v).copy()))
    exe = ctx.compile({T_: steps})
    exe.execute()
    assert exe.memory_stats()["swapped_bytes"] > 0  # the blocks did go to the host
    np.testing.assert_allclose(got[-1], want, rtol=1e-6)
