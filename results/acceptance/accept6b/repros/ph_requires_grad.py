"""A loss computed only from a placeholder whose branches read a requires_grad leaf:
backward() says no tensor requires grad (API 7.11: gradients flow through recurrences)."""
import numpy as np, torch
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
ctx = TempoContext(ExecutionConfig(dev="cpu", backend="numpy"), dim_names=("t",))
((t, T),) = ctx.variables_and_bounds
out = {}
with ctx:
    s = RT.const(np.float32(0.7), requires_grad=True)
    h = RT.placeholder((), dtypes.float32, domain=(t,))
    h[0] = s * 1.0
    h[t + 1] = h * s
    loss = h[0:T].sum(0)
    loss.backward()
    s.grad.sink_udf(lambda v: out.setdefault("g", float(v)))
ctx.compile({T: 4}).execute()
print(out["g"], "want", 1 + 2 * 0.7 + 3 * 0.49 + 4 * 0.343)
