import sys, dataclasses, time, faulthandler, os
import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
parts = set(sys.argv[1].split(","))
kw = {a.split("=")[0]: a.split("=")[1] == "1" for a in parts if "=" in a}
cfg = dataclasses.replace(ExecutionConfig(dev="cpu", backend="torch"), **kw)
B_, T_ = 4, 4
ctx = TempoContext(cfg, dim_names=("b", "t"))
(b, B), (t, T) = ctx.variables_and_bounds
with ctx:
    k = RT.const(np.array([0.3, 0.5, -0.2], np.float32), requires_grad=True)
    c = RT.const(np.float32(0.7), requires_grad=True)
    u = RT.placeholder((), dtypes.float32, domain=(b, t))
    u[b, 0] = RT.const(np.arange(B_, dtype=np.float32)).index(0, b)
    if "stack" in parts:
        nb = RT.stack([u[ie.max(b - 1, 0), t], u, u[ie.min(b + 1, B - 1), t]], dim=0)
        u[b, t + 1] = (nb * k).sum().tanh()
    else:
        u[b, t + 1] = (u * k.sum()).tanh()
    per = u * 0.0
    if "rev" in parts:
        r = RT.placeholder((), dtypes.float32, domain=(b, t))
        r[B - 1, t] = c * u
        r[True] = c * u + 0.5 * r[b + 1, t]
        per = per + r * r
    if "w2" in parts:
        per = per + u[ie.max(0, b - 1):b + 1, ie.max(0, t - 1):t + 1].mean((0, 1))
    if "corner" in parts:
        per = per + u[B - 1, t] * u[0, t] * 0.1
    loss = per[0:B, 0:T].sum((0, 1))
    if "nograd" not in parts: loss.backward()
    (k.grad if "nograd" not in parts else loss).sink_udf(lambda v: None)
t0 = time.time()
pid = os.fork()
if pid == 0:
    time.sleep(40); print("TIMEOUT"); os.kill(os.getppid(), 9); os._exit(0)
ctx.compile({B: B_, T: T_}).execute()
os.kill(pid, 9)
print("ok", round(time.time() - t0, 1))
