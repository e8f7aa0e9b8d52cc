"""torch regions run `minimum(maximum(x, lo), hi)` (what `clip` records) as one
torch.clamp (`region_folds.torch_folds`): bit for bit what the two calls give, one call; a
maximum read elsewhere too stays its own call."""

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


def _run(tmp_path: Any, shared_max: bool) -> tuple[list[np.ndarray], list[RegionOp]]:
    cfg = dataclasses.replace(
        all_passes(dataclasses.replace(ExecutionConfig.test_cfg(), path=str(tmp_path) + "/")),
        backend="torch")
    ctx = TempoContext(cfg, num_dims=1)
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
    (k, fold), = folds.items()
    assert lines[fold.absorbed + 1] == "    pass" and len(fold.reads) == 3  # x, lo, hi
    assert fold.kind == "clamp" and region_folds.fold_kernel("clamp") is torch.clamp
    x = torch.from_numpy(DATA) * 1.5
    want = torch.minimum(torch.maximum(x, torch.tensor(-1.0)), torch.tensor(0.5)) * 3.0
    np.testing.assert_array_equal(np.stack(got), want.numpy())  # NaN in place too


def test_a_maximum_read_elsewhere_is_not_folded(tmp_path: Any) -> None:
    got, regs = _run(tmp_path, shared_max=True)
    assert regs and not any(region_folds.torch_folds(r) for r in regs)
    x = torch.from_numpy(DATA) * 1.5
    want = torch.clamp(x, -1.0, 0.5) * 3.0
    np.testing.assert_array_equal(np.stack(got), want.numpy())
