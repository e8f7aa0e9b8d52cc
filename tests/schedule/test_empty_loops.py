"""A branch whose condition no point satisfies under the given bounds (`t + 20 < T` with
T = 12) is a loop that never runs: the schedule omits it instead of asking isl for the
bounds of an empty set (which crashed the lowering)."""

from __future__ import annotations

import numpy as np

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes


def test_branch_never_taken_under_the_bounds() -> None:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="numpy", path=""), num_dims=2)
    (b, B), (t, T) = ctx.variables_and_bounds
    out: list = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: np.float32(ts[t]), (), dtypes.float32,
                                  domain=(b, t))
        y = RT.placeholder((), dtypes.float32, domain=(b, t))
        j = ie.min(t + 20, T)
        y[t + 20 < T] = x[b, j] * RT.from_expr(j - t).cast(dtypes.float32)
        y[True] = x
        y[0:B, 0:T].sink_udf(lambda v: out.append(np.asarray(v)))
    ctx.compile({B: 2, T: 12}).execute()
    np.testing.assert_array_equal(out[0], np.tile(np.arange(12, dtype=np.float32), (2, 1)))

