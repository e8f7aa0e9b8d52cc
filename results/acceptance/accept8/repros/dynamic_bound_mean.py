"""accept8 finding (silently wrong): with a boolean bound {T: (MAXT, done)} over (i, t), the
mean of an episode x[i, 0:T].mean(0) divides by the cap MAXT instead of the episode's own T
when fusion is on. usage: dynamic_bound_mean.py [torch|numpy|jax] [default|fus_off] [grad]
(w over i: w[True] = w[i - 1] - 0.1 w.grad[i - 1] with grad, held otherwise)"""
import dataclasses
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext  # noqa: E402
from tempo.core.configs import ExecutionConfig  # noqa: E402
from tempo.core.dtype import dtypes  # noqa: E402

be = sys.argv[1] if len(sys.argv) > 1 else "torch"
var = sys.argv[2] if len(sys.argv) > 2 else "default"
grad = len(sys.argv) > 3
cfg = ExecutionConfig(dev="cpu", backend=be)
if var == "fus_off":
    cfg = dataclasses.replace(cfg, enable_fusion=False)
MAXT = 8
R = np.array([[0.5, 0.7, 0.9, 0.1, 0.2, 0.3, 0.4, 0.5], [0.1] * 8], np.float32)
ctx = TempoContext(cfg, dim_names=("i", "t"))
(i, I), (t, T) = ctx.variables_and_bounds
out = {}
with ctx:
    w = RT.placeholder((), dtypes.float32, domain=(i,), requires_grad=True)
    r = RT.const(R).index(0, i).index(0, t) * w
    acc = RT.placeholder((), dtypes.float32, domain=(i, t))
    acc[i, 0] = r
    acc[True] = acc[i, t - 1] + r
    done = acc > 1.5
    m = (r * r)[i, 0:T].mean(0)
    m.backward()
    w[0] = RT.const(np.float32(1.0))
    if grad:  # the weights of iteration i come from the gradient of iteration i - 1
        w[True] = w[i - 1].detach() - 0.1 * w.grad[i - 1]
    else:
        w[True] = w[i - 1].detach()
    m[0:I].sink_udf(lambda v: out.__setitem__("m", np.asarray(v).copy()))
ctx.compile({I: 2, T: (MAXT, done)}).execute()
w1 = 1.0 - 0.1 * 2 * np.mean(R[0, :3] ** 2) if grad else 1.0
want = [np.mean(R[0, :3] ** 2), np.mean((R[1] * w1) ** 2)]
print(out["m"], "want", np.round(want, 6), "ok" if np.allclose(out["m"], want) else "WRONG")
