"""`validate_pipeline_stages` (on in `debug_cfg()`) accepts a graph where a pass wrote a
bound's static value next to the recorded symbol: after batching over `t`, the discount
matrix of `discounted_cum_sum` is `(6, 6)` in its region and `(T, T)` where it was
recorded — the same shape in this compilation. It used to stop a REINFORCE-shaped program
with PassValidationError after grouping while the unvalidated run was right."""

from __future__ import annotations

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn.linear import Linear
from tempo.api.optim.optim import Adam
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

I_, B_, T_, G = 2, 3, 6, 0.9
X = np.random.default_rng(0).standard_normal((I_, B_, T_, 2)).astype(np.float32)


def _losses(validate: bool) -> list[float]:
    cfg = ExecutionConfig(dev="cpu", backend="torch", validate_pipeline_stages=validate)
    ctx = TempoContext(cfg, num_dims=3)
    (i, I), (b, B), (t, T) = ctx.variables_and_bounds
    got: list[float] = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: X[ts[i], ts[b], ts[t]], (2,), dtypes.float32,
                                  domain=(i, b, t))
        lin = Linear(2, 1, domain=(i,), w_init_fun=lambda shape, dtype, domain:
                     RT.const(np.full(shape, 0.5, np.float32)))
        opt = Adam(lin.parameters, lin.buffers, lr=0.1)
        r = -(x.sum()).abs()
        g = r[i, b, 0:T].discounted_cum_sum(G)
        loss = (lin(x).sum() * g.detach())[i, 0:B, 0:T].mean()
        loss.backward()
        opt.step()
        loss.sink_udf(lambda v: got.append(float(v)))
    ctx.compile({I: I_, B: B_, T: T_}).execute()
    return got


def _first_loss() -> float:
    r = -np.abs(X[0].sum(-1)).astype(np.float64)
    g = np.zeros_like(r)
    acc = np.zeros(B_)
    for k in reversed(range(T_)):
        acc = r[:, k] + G * acc
        g[:, k] = acc
    return float((X[0].sum(-1) * 0.5 * g).mean())


def test_validated_compile_runs_and_agrees() -> None:
    checked = _losses(validate=True)
    assert checked[0] == pytest.approx(_first_loss(), rel=1e-5)
    assert checked == pytest.approx(_losses(validate=False), rel=1e-6)
