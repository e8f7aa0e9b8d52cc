"""A region runs its members at every point of its domain, so a member demanded at fewer
points (`extendable` in the grouping pass: the env's next-state `where`, read by the
recurrence only for t < T - 1) is computed at points nobody reads. Those points are not
kept: the free of a point is placed at its last use, the producer itself when nothing
reads it, so after every step the region's output store holds only the point the next
step reads, and nothing is left at the end. Results equal numpy."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from programs import all_passes

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.ops_region import RegionOp
from tempo.core.sdg import TensorId

T_ = 8
XS = np.random.default_rng(5).standard_normal((T_, 4)).astype(np.float32)


def _program(backend: str) -> tuple[Any, list[float], Any]:
    cfg = dataclasses.replace(all_passes(ExecutionConfig.test_cfg()), backend=backend,
                              dev="cpu", path="")
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    out: list[float] = []
    with ctx:
        s = RT.placeholder((4,), dtypes.float32, domain=(t,))
        s[0] = RT.zeros((4,), dtypes.float32)
        x = RT.source_with_ts_udf(lambda ts: XS[ts[t]], (4,), dtypes.float32, domain=(t,))
        moved = (s * 0.9 + x * 0.5).clip(-1.0, 1.0)  # needed at every t (the total)
        live = RT.from_expr(t) < 3
        s[t + 1] = live.where(moved, moved * 0.0 - 1.0)  # read for t < T - 1 only
        (moved * moved)[0:T].sum().sink_udf(lambda v: out.append(float(v)))
    return ctx.compile({T: T_}), out, t


def _numpy() -> float:
    state, total = np.zeros(4, np.float32), np.float32(0.0)
    for k in range(T_):
        moved = np.clip(state * np.float32(0.9) + XS[k] * np.float32(0.5), -1.0, 1.0)
        total += (moved * moved).sum()
        state = moved if k < 3 else moved * np.float32(0.0) - 1.0
    return float(total)


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_points_a_region_computes_for_nobody_are_not_kept(backend: str) -> None:
    exe, out, t = _program(backend)
    joined = [op for op in exe.sdg.ops.values() if isinstance(op, RegionOp)
              and {"where", "maximum"} <= {m.describe() for m in op.body}]
    assert joined, "the where did not join the region that runs at every t"
    outs = [TensorId(r.op_id, k) for r in joined for k in range(r.num_outputs)  # the where's
            if any(isinstance(exe.sdg.ops[e.sink], ops.MergeOp)
                   for e in exe.sdg.readers(TensorId(r.op_id, k)))]
    assert outs
    most = 0
    while exe.tick():  # one iteration of the loop over t per tick
        for tid in outs:
            store = exe.stores.get(tid)
            most = max(most, len(store) if isinstance(store, dict) else 0)
    assert most <= 1  # the point the next step reads, never one nobody reads
    assert out == [pytest.approx(_numpy(), rel=1e-5)]
    assert all(len(exe.stores[tid]) == 0 for tid in outs)
