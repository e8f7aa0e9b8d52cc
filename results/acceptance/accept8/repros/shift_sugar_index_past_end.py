"""accept8 finding: h[t + 1] = 0.5 * h + X.index(0, t + 1) (shift sugar) with X of T rows:
the value at t = T - 1 defines h[T] (the extra point the sugar adds) and reads X[T], past the
end. The compile-time index check (which catches `X.index(0, t + 2)` as a plain read) does not
see it. Only h[0:T] is sunk. Observed: torch/numpy test_cfg raise a BackendError at run
time, jax clamps silently, the default config never computes h[T].
usage: shift_sugar_index_past_end.py [torch|jax|numpy] [default|test_cfg]"""
import dataclasses
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext  # noqa: E402
from tempo.core.configs import ExecutionConfig  # noqa: E402
from tempo.core.dtype import dtypes  # noqa: E402

be = sys.argv[1] if len(sys.argv) > 1 else "jax"
var = sys.argv[2] if len(sys.argv) > 2 else "test_cfg"
cfg = ExecutionConfig(dev="cpu", backend=be)
if var == "test_cfg":
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=be)
X = np.arange(5, dtype=np.float32)
ctx = TempoContext(cfg, dim_names=("t",))
((t, T),) = ctx.variables_and_bounds
out = {}
with ctx:
    h = RT.placeholder((), dtypes.float32, domain=(t,))
    h[0] = RT.const(X).index(0, 0)
    h[t + 1] = 0.5 * h + RT.const(X).index(0, t + 1)
    h[0:T].sink_udf(lambda a: out.__setitem__("h", np.asarray(a)))
ctx.compile({T: 5}).execute()
print(out["h"])
