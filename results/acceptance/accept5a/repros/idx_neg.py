import sys, dataclasses
import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
be, on = sys.argv[1], sys.argv[2] == "1"
cfg = dataclasses.replace(ExecutionConfig(dev="cpu", backend=be), enable_vectorization=on, enable_fusion=on)
c = TempoContext(cfg, dim_names=("t",))
((t, T),) = c.variables_and_bounds
s = {}
with c:
    x = RT.const(np.arange(5, dtype=np.float32) + 1).index(0, t - 1)
    (x * 2.0)[0:T].sink_udf(lambda v: s.__setitem__("x", np.asarray(v)))
c.compile({T: 5}).execute()
print(s)
