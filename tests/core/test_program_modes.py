"""The forced modes of the program-test harness (`programs.MODES`) do what they force: a
mode that silently ran the plain pipeline would let every program test pass unchecked."""

from __future__ import annotations

import torch
from programs import (
    MODES,
    Program,
    circular_mode,
    memory_mode,
    run_plain,
    run_swapped,
    swap_mode,
)

from tempo.api import RecurrentTensor as RT
from tempo.core.dtype import dtypes
from tempo.runtime.stores import CircularStore
from tempo.runtime.stores_ring import RingStore

T_ = 9
XT = torch.randn(T_, 64, generator=torch.Generator().manual_seed(0))


def _program() -> Program:
    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = RT.source_with_ts_udf(lambda ts: XT[ts[t]], (64,), dtypes.float32, domain=(t,))
        y = (x * 2.0).exp()
        z = RT.placeholder((64,), dtypes.float32, domain=(t,))
        z[0] = y[0]
        z[True] = z[t - 1] * 0.5 + y + y[t - 1]
        return {"z": z}

    return Program(1, build, {0: T_})


def _want() -> torch.Tensor:
    y = (XT * 2.0).exp()
    out = [y[0]]
    for k in range(1, T_):
        out.append(out[-1] * 0.5 + y[k] + y[k - 1])
    return torch.stack(out)


def test_modes_have_distinct_names() -> None:
    names = [m.name for m in MODES]
    assert len(names) == len(set(names)) and {"blocks", "memory", "circular", "swap"} <= set(names)


def test_circular_mode_gives_point_read_tensors_window_stores(cfg) -> None:
    prog = _program()
    plain, mem = run_plain(memory_mode(cfg), prog, {})
    got, exe = run_plain(circular_mode(cfg), prog, {})
    assert not any(isinstance(s, CircularStore | RingStore) for s in mem.stores.values())
    point_read = [tid for tid, s in exe.stores.items()
                  if isinstance(s, RingStore) and tid not in exe.sdg.block_stores]
    assert point_read  # tensors read only at points (z's terms) get windows too
    torch.testing.assert_close(plain["z"], _want(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got["z"], plain["z"], rtol=0, atol=0)


def test_swap_mode_swaps_under_a_cap_below_the_peak(cfg) -> None:
    prog = _program()
    plain, mem = run_plain(memory_mode(cfg), prog, {})
    got, exe = run_swapped(swap_mode(cfg), prog, {"memory": mem})
    stats = exe.memory_stats()
    assert stats["cap_bytes"] < mem.accountant.peak
    assert stats["swapped_bytes"] > 0 and stats["peak_bytes"] <= stats["cap_bytes"]
    torch.testing.assert_close(got["z"], plain["z"], rtol=0, atol=0)
    torch.testing.assert_close(got["z"], _want(), rtol=1e-5, atol=1e-5)


def test_swap_mode_swaps_blocks_of_block_stores(cfg, monkeypatch) -> None:
    """y is read through ranges in a loop after the one that makes it: it gets a block
    store, and under the swap mode's cap its blocks go to the host and back."""
    from tempo.runtime.swap_blocks import SwapBlockStore

    def build(tT):  # noqa: ANN001, ANN202
        t, T = tT
        x = RT.source_with_ts_udf(lambda ts: XT[ts[t]], (64,), dtypes.float32, domain=(t,))
        y = (x * 2.0).exp()
        return {"back": y[T - 1 - t:T - t].sum(0) * 3.0}

    moved: list[int] = []
    evict = SwapBlockStore.evict
    monkeypatch.setattr(SwapBlockStore, "evict",
                        lambda self, key: moved.append(evict(self, key)) or moved[-1])
    prog = Program(1, build, {0: T_})
    plain, mem = run_plain(memory_mode(cfg), prog, {})
    got, exe = run_swapped(swap_mode(cfg), prog, {"memory": mem})
    assert any(isinstance(s, SwapBlockStore) for s in exe.stores.values())
    stats = exe.memory_stats()
    # y's blocks went to the host (at least a row of 64 floats) and came back (values). The
    # capped plan keeps x's loop (vectorize_plan under a cap) and holds less than the
    # uncapped one, so less of y has to move than under the vectorised plan.
    assert sum(moved) >= 64 * 4
    assert stats["peak_bytes"] <= stats["cap_bytes"] < mem.accountant.peak
    torch.testing.assert_close(plain["back"], (XT * 2.0).exp().flip(0) * 3.0)
    torch.testing.assert_close(got["back"], plain["back"], rtol=0, atol=0)
