"""enable_index_ops=False: the gradient of a sum over a 2-D window x[max(0,b-1):b+1, 0:t+1]
fails at run time (numpy: cannot reshape array of size 24 into shape (2,1,3)); with index ops
on (python index_ops_off_min.py 2d on) grad = [210, 240, 270], right; the 1-D window
x[b, 0:t+1] is right with index ops off too. usage: index_ops_off_min.py 1d|2d|flat on|off"""
import numpy as np, sys
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
cfg = ExecutionConfig(dev="cpu", backend="numpy", enable_index_ops=(sys.argv[2] == "on"))
ctx = TempoContext(cfg, dim_names=("b", "t"))
(b, B), (t, T) = ctx.variables_and_bounds
X = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
mode = sys.argv[1]
with ctx:
    w = RT.const(np.ones(3, np.float32), requires_grad=True)
    x = RT.const(X).index(0, b).index(0, t) * w
    if mode == "2d":
        z = x[ie.max(0, b - 1):b + 1, 0:t + 1].sum((0, 1, 2))
    elif mode == "flat":
        z = x[ie.max(0, b - 1):b + 1, 0:t + 1].flatten(0, 1).sum((0, 1))
    else:
        z = x[b, 0:t + 1].sum((0, 1))
    z[0:B, 0:T].sum((0, 1)).backward()
    w.grad.sink_udf(lambda v: print("grad", v))
ctx.compile({B: 2, T: 4}).execute()
