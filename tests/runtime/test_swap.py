"""Swapping (enable_swap): under a device cap the program's stored points move to the host
pool and back, results equal eager torch, and the device peak stays under the cap."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoMemoryError

T, D = 12, 256  # points of 1 KiB


def _run(cfg, cap: int | None, swap: bool, backend: str = "torch"):  # noqa: ANN001, ANN202
    cfg = dataclasses.replace(cfg, backend=backend, enable_gc=True, enable_swap=swap,
                              swap_bytes_min=0, device_memory_cap_bytes=cap)
    data = torch.randn(T, D, generator=torch.Generator().manual_seed(3))
    got: list[torch.Tensor] = []
    ctx = TempoContext(cfg, num_dims=1)
    (t, TT), = ctx.variables_and_bounds
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]] * 1.0, (D,), dtypes.float32,
                                  domain=(t,))
        (x[TT - 1 - t] * 2.0).sink_udf(lambda v: got.append(torch.as_tensor(v).clone()))
    exe = ctx.compile({TT: T})
    exe.execute()
    torch.testing.assert_close(torch.stack(got), data.flip(0) * 2.0)
    return exe


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
