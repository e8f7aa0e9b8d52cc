"""A backwards recurrence over a dimension a boolean bound ends (API 7.10): returns over an
episode G[T-1] = x, G[t] = x + 0.5 G[t+1]: BackendError 'mul(): argument must be Tensor, not
NoneType' (numpy: 'float' * 'NoneType') on every backend."""
import sys
import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
be = sys.argv[1] if len(sys.argv) > 1 else "numpy"
X = np.array([0.5, 0.7, 0.9, 1.1, 0.3, 0.2, 0.1, 0.4], np.float32)
ctx = TempoContext(ExecutionConfig(dev="cpu", backend=be), dim_names=("t",))
((t, T),) = ctx.variables_and_bounds
log = []
with ctx:
    x = RT.const(X).index(0, t)
    acc = RT.placeholder((), dtypes.float32, domain=(t,))
    acc[0] = x
    acc[t + 1] = acc + x[t + 1]
    G = RT.placeholder((), dtypes.float32, domain=(t,))
    G[T - 1] = x
    G[True] = x + 0.5 * G[t + 1]
    G.sink_with_ts_udf(lambda v, ts: log.append((ts[t], float(v))))
ctx.compile({T: acc > 2.0}).execute()
n = int(np.argmax(np.cumsum(X) > 2.0)) + 1
g = [0.0] * n
for k in reversed(range(n)):
    g[k] = X[k] + (0.5 * g[k + 1] if k < n - 1 else 0.0)
print(sorted(log), "want", [(k, round(float(v), 4)) for k, v in enumerate(g)])
