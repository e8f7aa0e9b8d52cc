"""Fused regions under a device memory cap (issue 13 × fusion): regions form, and a tracked
run charges each region call its scratch bytes (the most bytes its members' values hold at
once, `RegionOp.scratch_bytes`), so the accountant's peak stays at or above the true peak,
a cap below the true peak fails fused as it fails unfused, and results equal the unfused
run bit for bit."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch
from programs import all_passes

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.compiler.passes.grouping import scratch_bytes
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoMemoryError
from tempo.core.ops_region import Ref, RegionOp
from tempo.core.sdg import TensorId

N, T_ = 128, 4
OUTER = N * N * 4  # bytes of one (N, N) float32 intermediate
DATA = np.random.default_rng(5).standard_normal((T_, N)).astype(np.float32)


def _run(tmp_path: Any, backend: str, cap: int, fused: bool) -> tuple[np.ndarray, Any]:
    """Per step: the (N, N) outer product of x, its tanh, the row sums: two (N, N)
    intermediates alive together inside, an (N,) result outside."""
    cfg = dataclasses.replace(
        all_passes(dataclasses.replace(ExecutionConfig.test_cfg(), path=str(tmp_path) + "/")),
        backend=backend, device_memory_cap_bytes=cap, enable_dataflow_grouping=fused)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: list[np.ndarray] = []
    data = torch.from_numpy(DATA)
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]] * 1.0, (N,), dtypes.float32,
                                  domain=(t,))
        y = ((x.unsqueeze(1) * x.unsqueeze(0)).tanh() * 0.5).sum(1)
        y.sink_udf(lambda v: got.append(np.array(v)))
    exe = ctx.compile({T: T_})
    exe.execute()
    return np.stack(got), exe


def _regions(exe: Any) -> list[RegionOp]:
    return [op for op in exe.sdg.ops.values() if isinstance(op, RegionOp)]


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_regions_form_under_a_cap_and_the_accountant_bounds_the_true_peak(
        backend: str, tmp_path: Any) -> None:
    fused, exe = _run(tmp_path, backend, 1 << 30, fused=True)
    plain, ref = _run(tmp_path, backend, 1 << 30, fused=False)
    regions = _regions(exe)
    assert regions and max(r.scratch_bytes for r in regions) >= 2 * OUTER
    assert "_A.live +=" in exe.generated.source
    np.testing.assert_array_equal(fused, plain)  # bit for bit
    x = torch.from_numpy(DATA)
    want = (torch.tanh(x[:, :, None] * x[:, None, :]) * 0.5).sum(2).numpy()
    np.testing.assert_allclose(fused, want, rtol=1e-5, atol=1e-5)
    # the true peak holds the outer product and its tanh at once (plus x)
    true_peak = 2 * OUTER + N * 4
    assert exe.accountant.peak >= true_peak, (exe.accountant.peak, true_peak)
    assert exe.accountant.peak >= ref.accountant.peak - N * 4 * 2, (
        exe.accountant.peak, ref.accountant.peak)
    assert exe.memory_stats()["live_bytes"] == 0  # every scratch charge is credited


def test_a_cap_below_the_regions_scratch_fails_fused_as_unfused(tmp_path: Any) -> None:
    """Under 2 * OUTER nothing fits (the outer product and its tanh coexist): both runs
    raise; with the charge left out, the fused run would have passed silently."""
    cap = 2 * OUTER - 1024
    for fused in (False, True):
        with pytest.raises(TempoMemoryError):
            _run(tmp_path, "torch", cap, fused)


def test_scratch_counts_values_alive_at_once() -> None:
    """a → b → c with b and c reading only their predecessor: at most two alive at once;
    an output stays alive to the end."""
    ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=0)
    with ctx:
        a = RT.const(np.ones(10, np.float32)).exp()       # 40 bytes
        b = a.unsqueeze(0).expand((4, 10)) * 2.0           # 160 (the expand: 160 too)
        c = b.sum(0)                                       # 40
    sdg = ctx.sdg
    members = [a.tensor_id.op_id, *sorted(i for i in sdg.ops if i > a.tensor_id.op_id)]
    members = [m for m in members if m in sdg.ops and sdg.ops[m].name != "const"]
    pos = {m: k for k, m in enumerate(members)}
    reads = [tuple(Ref(pos[e.src.op_id], e.src.output_id) if e.src.op_id in pos
                   else Ref(-1, 0) for e in sdg.in_edges[m]) for m in members]
    got = scratch_bytes(sdg, members, reads, [c.tensor_id])
    nbytes = [int(np.prod(tuple(sdg.tensors[TensorId(m, 0)].shape))) * 4 for m in members]
    # the largest adjacent pair (a value and the next one made from it) bounds it
    assert got == max(nbytes[k] + nbytes[k + 1] for k in range(len(nbytes) - 1))
