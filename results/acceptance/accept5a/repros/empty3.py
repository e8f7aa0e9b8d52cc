import sys
import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
be = sys.argv[1]; vec = sys.argv[2] == "1"; which = sys.argv[3]
cfg = ExecutionConfig(dev="cpu", backend=be, enable_vectorization=vec, enable_fusion=vec)
ctx = TempoContext(cfg, dim_names=("t",))
((t, T),) = ctx.variables_and_bounds
s = {}
X = np.arange(1, 6, dtype=np.float32)
M = np.arange(10, dtype=np.float32).reshape(5, 2)
with ctx:
    x = RT.const(X).index(0, t)
    m = RT.const(M).index(0, t)
    outs = dict(
        mean=lambda: x[0:t].mean(0),
        mm=lambda: x[0:t] @ x[0:t],
        cum=lambda: x[t + 1:T].cumsum(0).sum(0),
        max=lambda: x[t + 1:T].max(0)[0],
        att=lambda: (m[0:t] @ m).softmax(0) @ m[0:t],
        sortsum=lambda: x[0:t].sort(0)[0].sum(0),
        flip=lambda: x[0:t].flip(0).sum(0),
        grad=lambda: None,
    )
    v = outs[which]()
    v[0:T].sink_udf(lambda a: s.__setitem__("v", np.asarray(a)))
ctx.compile({T: 5}).execute()
print(which, s["v"])
