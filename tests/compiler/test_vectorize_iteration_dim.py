"""The iteration dim stays a loop (issue 10): in a `(b, i, t)` program — parameters over
`i`, an episode over `t` — what only a per-iteration sink reads is computed in iteration
`i`, so the sink reports while training runs, not after the last iteration."""

from __future__ import annotations

import numpy as np

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes


def test_per_iteration_sink_runs_inside_the_iteration_loop() -> None:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="torch", path=""), num_dims=3)
    (b, B), (i, I), (t, T) = ctx.variables_and_bounds
    order: list[tuple[str, int]] = []
    losses: list[float] = []
    with ctx:
        w = RT.placeholder((), dtypes.float32, domain=(i,))
        w[0] = RT.const(1.0)
        x = RT.placeholder((), dtypes.float32, domain=(b, i, t))
        x[b, i, 0] = w + RT.lift(b).cast(dtypes.float32)
        x[b, i, t + 1] = x * 0.5
        loss = (x[0:B, i, 0:T] ** 2).mean()

        def seen(v: object, ts: dict) -> None:
            order.append(("w", ts[i]))

        w.sink_with_ts_udf(seen)
        w[i + 1] = w - 0.1 * loss
        # a metric nothing else reads: it does not feed the recurrence over i
        sq = x[0:B, i, 0:T] ** 2
        metric = ((sq + 1.0).log().exp() - 1.0).abs().mean() * 2.0
        metric.sink_with_ts_udf(lambda v, ts: (order.append(("loss", ts[i])),
                                               losses.append(float(np.asarray(v)))))
    exe = ctx.compile({B: 3, I: 4, T: 5})
    exe.execute()
    # The loss of iteration k is reported before the parameters of iteration k + 1 are.
    for k in range(3):
        assert order.index(("loss", k)) < order.index(("w", k + 1)), order
    # ... and has the value of an eager loop.
    wv, want = 1.0, []
    for _ in range(4):
        xs = np.array([[(wv + bb) * 0.5 ** tt for tt in range(5)] for bb in range(3)])
        want.append(2.0 * float((xs ** 2).mean()))
        wv -= 0.1 * want[-1] / 2.0
    np.testing.assert_allclose(losses, want, rtol=1e-5)
