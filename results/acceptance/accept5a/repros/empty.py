import sys
import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
be = sys.argv[1]; vec = sys.argv[2] == "1"
cfg = ExecutionConfig(dev="cpu", backend=be, enable_vectorization=vec, enable_fusion=vec)
ctx = TempoContext(cfg, dim_names=("t",))
((t, T),) = ctx.variables_and_bounds
s = {}
with ctx:
    x = RT.const(np.arange(1, 6, dtype=np.float32)).index(0, t)
    y = x[t + 1:T].sum(0)
    z = x[0:t].sum(0)
    y[0:T].sink_udf(lambda v: s.__setitem__("y", np.asarray(v)))
    z[0:T].sink_udf(lambda v: s.__setitem__("z", np.asarray(v)))
ctx.compile({T: 5}).execute()
print(s)
