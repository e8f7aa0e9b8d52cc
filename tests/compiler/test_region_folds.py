"""torch regions run `minimum(maximum(x, lo), hi)` (what `clip` records) as one
torch.clamp (`region_folds.torch_folds`): bit for bit what the two calls give, one call; a
maximum read elsewhere too stays its own call. `x * sigmoid(x)` runs as one F.silu (an
integer x as the pair), a sigmoid read elsewhere too keeps both calls."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch
from programs import all_passes

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.ops_region import RegionOp
from tempo.runtime import region_folds, regions

T_ = 4
DATA = (np.random.default_rng(2).standard_normal((T_, 33)) * 2).astype(np.float32)
DATA[1, 3] = np.nan


def _context(tmp_path: Any) -> TempoContext:
    """A torch context with every pass on (regions are made)."""
    cfg = dataclasses.replace(
        all_passes(dataclasses.replace(ExecutionConfig.test_cfg(), path=str(tmp_path) + "/")),
        backend="torch")
    return TempoContext(cfg, num_dims=1)


def _run(tmp_path: Any, shared_max: bool) -> tuple[list[np.ndarray], list[RegionOp]]:
    ctx = _context(tmp_path)
    ((t, T),) = ctx.variables_and_bounds
    got: list[list[np.ndarray]] = [[], []]
    data = torch.from_numpy(DATA)
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]] * 1.0, (33,), dtypes.float32,
                                  domain=(t,))
        y = (x * 1.5).clip(-1.0, 0.5) * 3.0
        y.sink_udf(lambda v: got[0].append(np.asarray(v).copy()))
        if shared_max:  # the clip's maximum read by another op too
            z = RT.maximum(x * 1.5, -1.0) + 2.0
            z.sink_udf(lambda v: got[1].append(np.asarray(v).copy()))
    exe = ctx.compile({T: T_})
    exe.execute()
    return got[0], [op for op in exe.sdg.ops.values() if isinstance(op, RegionOp)]


def test_clip_in_a_region_is_one_clamp_bit_for_bit(tmp_path: Any) -> None:
    got, regs = _run(tmp_path, shared_max=False)
    folded = [r for r in regs if region_folds.torch_folds(r)]
    assert folded, "the clip's maximum-minimum pair was not folded"
    folds = region_folds.torch_folds(folded[0])
    lines = regions.source(folded[0], folds).splitlines()
    (k, fold), = ((k, f) for k, f in folds.items() if f.absorbed)
    (absorbed,) = fold.absorbed
    assert lines[absorbed + 1] == "    pass" and len(fold.reads) == 3  # x, lo, hi
    assert region_folds.fold_kernel("clamp") is torch.clamp
    # x * 1.5 is the region's own value, read by the clip alone: clamped in place, and
    # the clip's value scaled by 3 in place in turn (region_folds_in_place)
    assert fold.kind == "in_place:clamp_"
    assert region_folds.fold_kernel(fold.kind) is torch.Tensor.clamp_
    assert [f.kind for j, f in folds.items() if j != k] == ["in_place:mul_"]
    x = torch.from_numpy(DATA) * 1.5
    want = torch.minimum(torch.maximum(x, torch.tensor(-1.0)), torch.tensor(0.5)) * 3.0
    np.testing.assert_array_equal(np.stack(got), want.numpy())  # NaN in place too


def test_a_maximum_read_elsewhere_is_not_folded(tmp_path: Any) -> None:
    got, regs = _run(tmp_path, shared_max=True)
    assert regs and not any(f.absorbed for r in regs for f in region_folds.torch_folds(r).values())
    x = torch.from_numpy(DATA) * 1.5
    want = torch.clamp(x, -1.0, 0.5) * 3.0
    np.testing.assert_array_equal(np.stack(got), want.numpy())


def _swish_run(tmp_path: Any, data: torch.Tensor, sig_elsewhere: bool = False
               ) -> tuple[list[np.ndarray], list[np.ndarray], list[RegionOp]]:
    ctx = _context(tmp_path)
    ((t, T),) = ctx.variables_and_bounds
    got: list[list[np.ndarray]] = [[], []]
    dt = dtypes.float32 if data.is_floating_point() else dtypes.int64
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]] * 1, (33,), dt, domain=(t,))
        y = x * 2
        s = y.sigmoid()
        (y * s + 1.0).sink_udf(lambda v: got[0].append(np.asarray(v).copy()))
        if sig_elsewhere:  # the sigmoid read by another op too: both calls stay
            (s * 3.0).sink_udf(lambda v: got[1].append(np.asarray(v).copy()))
    exe = ctx.compile({T: T_})
    exe.execute()
    return got[0], got[1], [op for op in exe.sdg.ops.values() if isinstance(op, RegionOp)]


def test_swish_in_a_region_is_one_silu(tmp_path: Any) -> None:
    data = torch.from_numpy(DATA)
    got, _, regs = _swish_run(tmp_path, data)
    kinds = [f.kind for r in regs for f in region_folds.torch_folds(r).values()]
    assert kinds == ["silu", "in_place:add_"]  # + 1.0 over silu's value
    y = data * 2
    want = (y * torch.sigmoid(y) + 1.0).numpy()  # torch eager, the unfolded pair
    np.testing.assert_allclose(np.stack(got), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(np.isnan(np.stack(got)), np.isnan(want))


def test_swish_of_integers_and_a_shared_sigmoid(tmp_path: Any) -> None:
    ints = torch.from_numpy((DATA[np.arange(T_) != 1] * 3).astype(np.int64))
    ints = torch.cat([ints, ints[:1]])
    got, _, regs = _swish_run(tmp_path, ints)
    assert [f.kind for r in regs for f in region_folds.torch_folds(r).values()] == [
        "silu", "in_place:add_"]
    y = ints * 2
    np.testing.assert_allclose(np.stack(got), (y * torch.sigmoid(y) + 1.0).numpy(),
                               rtol=1e-6)
    got, sig, regs = _swish_run(tmp_path, torch.from_numpy(DATA), sig_elsewhere=True)
    assert not any(f.kind == "silu" for r in regs for f in region_folds.torch_folds(r).values())
    y = torch.from_numpy(DATA) * 2
    np.testing.assert_allclose(np.stack(sig), (torch.sigmoid(y) * 3.0).numpy(), rtol=1e-6)
