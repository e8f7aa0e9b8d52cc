"""accept8 finding: with a dynamic bound {T: (MAXT, done)}, `RT.arange(T - t)` (a shape
using the bound) and the suffix slice `r[i, t:T]` disagree: the arange is sized with the cap
MAXT, the slice with the episode's own end -> BackendError in the mul ('size of tensor a (8)
must match ... b (3)').
usage: dynamic_bound_arange.py [torch|numpy] [suffix|prefix|whole]"""
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext  # noqa: E402
from tempo.core.configs import ExecutionConfig  # noqa: E402
from tempo.core.dtype import dtypes  # noqa: E402

be = sys.argv[1] if len(sys.argv) > 1 else "torch"
kind = sys.argv[2] if len(sys.argv) > 2 else "suffix"
MAXT = 8
R = np.array([[0.5, 0.7, 0.9, 0.1, 0.2, 0.3, 0.4, 0.5], [0.1] * 8], np.float32)
ctx = TempoContext(ExecutionConfig(dev="cpu", backend=be), dim_names=("i", "t"))
(i, I), (t, T) = ctx.variables_and_bounds
out = {"G": []}
with ctx:
    r = RT.const(R).index(0, i).index(0, t)
    acc = RT.placeholder((), dtypes.float32, domain=(i, t))
    acc[i, 0] = r
    acc[True] = acc[i, t - 1] + r
    done = acc > 1.5
    if kind == "suffix":
        G = (0.5 ** RT.arange(T - t).cast(dtypes.float32) * r[i, t:T]).sum(0)
    elif kind == "prefix":
        G = (0.5 ** RT.arange(t + 1).cast(dtypes.float32) * r[i, 0:t + 1]).sum(0)
    else:
        G = (0.5 ** RT.arange(T).cast(dtypes.float32) * r[i, 0:T]).sum(0)
    G.sink_udf(lambda v: out["G"].append(float(np.asarray(v))))
ctx.compile({I: 2, T: (MAXT, done)}).execute()
print(out["G"])
# episode 0 ends at t = 2 (0.5 + 0.7 + 0.9 > 1.5): suffix G = [0.5+0.35+0.225, 0.7+0.45, 0.9]
