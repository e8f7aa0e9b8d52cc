"""Tracked runs keep transients in locals charged by their static bytes (codegen_charges):
the accountant still sees them (peak, cap), views cost nothing of their own, and the
results equal eager torch."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoMemoryError

N = 1024  # floats per point: 4 KiB


def _run(cfg, cap: int, backend: str = "torch", T: int = 6):  # noqa: ANN001, ANN202
    cfg = dataclasses.replace(cfg, backend=backend, device_memory_cap_bytes=cap, enable_gc=True,
                              enable_custom_thunk_launchers=True)
    data = torch.randn(T, N, generator=torch.Generator().manual_seed(0))
    ctx = TempoContext(cfg, num_dims=1)
    (t, TT), = ctx.variables_and_bounds
    got: list[torch.Tensor] = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]] * 1.0, (N,), dtypes.float32,
                                  domain=(t,))
        z = x.reshape((32, 32)).permute((1, 0)) * 2.0  # two views, then a new tensor
        z.sum().sink_udf(lambda v: got.append(torch.as_tensor(v).clone()))
    exe = ctx.compile({TT: T})
    exe.execute()
    want = (data.reshape(T, 32, 32).permute(0, 2, 1) * 2.0).sum((1, 2))
    torch.testing.assert_close(torch.stack(got), want, rtol=1e-5, atol=1e-4)
    return exe


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_tracked_locals_see_transients_and_views_cost_nothing(cfg, backend: str) -> None:
    exe = _run(cfg, 1 << 30, backend)
    assert "_A.live +=" in exe.generated.source  # transients are charged locals
    stats = exe.memory_stats()
    assert stats["live_bytes"] == 0
    # x (4 KiB) and x * 2 (4 KiB) are alive together; the reshape and permute views of x
    # add nothing (counting them would give 16 KiB)
    assert 2 * 4 * N <= stats["peak_bytes"] <= 2 * 4 * N + 64


def test_a_cap_below_the_transients_raises_naming_the_tensor(cfg) -> None:
    with pytest.raises(TempoMemoryError, match="device_memory_cap_bytes=6000"):
        _run(cfg, 6000)


def test_reset_after_a_failed_run_restores_live(cfg) -> None:
    with pytest.raises(TempoMemoryError):
        _run(cfg, 6000)
    exe = _run(cfg, 1 << 30)
    exe.accountant.live += 123  # as a run stopped between a local's charge and credit
    exe.reset()
    assert exe.memory_stats()["live_bytes"] == 0


@pytest.mark.parametrize("tracked", [False, True])
def test_block_stored_points_read_where_written_come_from_a_local(cfg, tracked: bool) -> None:
    """x goes to a block store (x[0:t+1] reads it) and x[t] is read at t too: that read
    takes the value just computed, not a view from the store; results equal eager."""
    T = 7
    cfg = dataclasses.replace(cfg, enable_gc=True, enable_custom_thunk_launchers=True,
                              inc_statify_block_size=3, enable_hybrid_tensorstore=True,
                              enable_inplace_write=True, enable_lazy_slice=True,
                              executor_debug_mode=False,
                              device_memory_cap_bytes=(1 << 30) if tracked else None)
    data = torch.randn(T, 8, generator=torch.Generator().manual_seed(1))
    ctx = TempoContext(cfg, num_dims=1)
    (t, TT), = ctx.variables_and_bounds
    got: list[torch.Tensor] = []
    with ctx:
        src = RT.source_with_ts_udf(lambda ts: data[ts[t]], (8,), dtypes.float32, domain=(t,))
        x = src.exp()
        (x[0:t + 1].sum(0) * x).sink_udf(lambda v: got.append(torch.as_tensor(v).clone()))
    exe = ctx.compile({TT: T})
    exe.execute()
    # written to the block store (a tracked run copies it in, an untracked one defers the
    # copy through the store's pending dict) and kept in a local
    # (the pending dict of the loop's prefix is bound to a local `_h..` before the loop)
    assert ("; ws" if tracked else "; _h") in exe.generated.source
    want = torch.stack([data[: k + 1].exp().sum(0) * data[k].exp() for k in range(T)])
    torch.testing.assert_close(torch.stack(got), want, rtol=1e-5, atol=1e-5)
    if tracked:
        assert exe.memory_stats()["live_bytes"] == 0
