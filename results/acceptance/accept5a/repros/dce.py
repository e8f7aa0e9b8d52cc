import sys, dataclasses
import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
parts = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else set()
cfg = ExecutionConfig(dev="cpu", backend="torch", enable_dead_code_elim="dceon" not in parts)
B_, T_, H_ = 2, 5, 3
rng = np.random.default_rng(3)
W = (rng.normal(size=(H_, H_)) * 0.5).astype(np.float32)
X = rng.normal(size=(B_, T_, H_)).astype(np.float32)
ctx = TempoContext(cfg, dim_names=("b", "t"))
(b, B), (t, T) = ctx.variables_and_bounds
s = {}
with ctx:
    w = RT.const(W, requires_grad=True)
    x = RT.const(X).index(0, b).index(0, t)
    h = RT.placeholder((H_,), dtypes.float32, domain=(b, t))
    h[b, 0] = x.tanh()
    h[b, t + 1] = (h @ w + x[b, t + 1]).tanh()
    per = h.sum() * 0
    if "att" in parts:
        kk = h[b, 0:t + 1]
        per = per + ((kk @ h).softmax(0) @ kk).sum()
    if "grow" in parts:
        per = per + h[b, 0:t + 1].sum()
    if "growsq" in parts:
        per = per + (h[b, 0:t + 1] * h[b, 0:t + 1]).sum()
    if "mm" in parts:
        per = per + (h[b, 0:t + 1] @ h).sum()
    if "win" in parts:
        per = per + h[b, ie.max(0, t - 2):t + 1].mean(0).sum()
    if "g" in parts:
        g = RT.placeholder((H_,), dtypes.float32, domain=(b, t))
        g[b, T - 1] = h
        g[True] = h + 0.9 * g[b, t + 1]
        per = per + g.sum()
    loss = per[0:B, 0:T].sum((0, 1))
    loss.backward()
    w.grad.sink_udf(lambda v: print(v))
exe = ctx.compile({B: B_, T: T_})
if "sched" in parts: print(exe.schedule_text())
exe.execute()
