"""backward() through a recurrence over a dimension a boolean bound ends: a raw KeyError: T
at compile (no TempoError)."""
import sys
import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
be = sys.argv[1] if len(sys.argv) > 1 else "numpy"
X = np.array([0.5, 0.7, 0.9, 1.1, 0.3, 0.2, 0.1, 0.4], np.float32)
ctx = TempoContext(ExecutionConfig(dev="cpu", backend=be), dim_names=("t",))
((t, T),) = ctx.variables_and_bounds
out = {}
with ctx:
    s = RT.const(np.float32(1.3), requires_grad=True)
    x = RT.const(X).index(0, t)
    acc = RT.placeholder((), dtypes.float32, domain=(t,))
    acc[0] = x
    acc[t + 1] = acc + x[t + 1]
    h = RT.placeholder((), dtypes.float32, domain=(t,))
    h[0] = x * s
    h[t + 1] = (h * s + x[t + 1]).tanh()
    h[0:T].sum(0).backward()
    s.grad.sink_udf(lambda v: out.setdefault("g", float(v)))
ctx.compile({T: acc > 2.0}).execute()
print(out)
