"""accept8 finding: a spatial index by an index expression past the dim's end,
`RT.const(X).index(0, t + 2)` with X of 5 rows and T = 5. torch / numpy raise a BackendError
at run time ('index 5 out of range'); jax clamps (jnp indexing) and gives X[4] silently.
usage: index_past_end.py [torch|jax|numpy] [default|test_cfg]"""
import dataclasses
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext  # noqa: E402
from tempo.core.configs import ExecutionConfig  # noqa: E402

be = sys.argv[1] if len(sys.argv) > 1 else "jax"
var = sys.argv[2] if len(sys.argv) > 2 else "default"
cfg = ExecutionConfig(dev="cpu", backend=be)
if var == "test_cfg":
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=be)
X = np.arange(20, dtype=np.float32).reshape(5, 4)
ctx = TempoContext(cfg, dim_names=("t",))
((t, T),) = ctx.variables_and_bounds
out = {}
with ctx:
    y = RT.const(X).index(0, t + 2)
    y[0:T].sink_udf(lambda a: out.__setitem__("y", np.asarray(a)))
ctx.compile({T: 5}).execute()
print(out["y"][:, 0])
