"""accept8 finding: gradients of per-step terms that read a dynamic episode (boolean bound
{T: (MAXT, done)} over (i, t)), w a leaf per i (a placeholder over (i,) held constant).
usage: dynamic_episode_grad_reads.py [torch|numpy] [default|test_cfg] TERM
TERM: last (r[i, T - 1] read from every t), win, dcs, cum, mean, max"""
import dataclasses
import sys
import warnings

import numpy as np
import torch

warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext  # noqa: E402
from tempo.api import max as ie_max  # noqa: E402
from tempo.core.configs import ExecutionConfig  # noqa: E402
from tempo.core.dtype import dtypes  # noqa: E402

be, var, term = (sys.argv[1:] + ["torch", "default", "last"][len(sys.argv) - 1:])[:3]
cfg = ExecutionConfig(dev="cpu", backend=be)
if var == "test_cfg":
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=be)
MAXT, THR = 6, 1.2
X = np.array([[0.5, 0.3, 0.9, 0.1, 0.2, 0.3], [0.1] * 6], np.float32)
ctx = TempoContext(cfg, dim_names=("i", "t"))
(i, I), (t, T) = ctx.variables_and_bounds
out = {}
with ctx:
    w = RT.placeholder((), dtypes.float32, domain=(i,), requires_grad=True)
    w[True] = RT.const(np.float32(1.5))
    r = RT.const(X).index(0, i).index(0, t) * w
    acc = RT.placeholder((), dtypes.float32, domain=(i, t))
    acc[i, 0] = r
    acc[True] = acc[i, t - 1] + r
    done = acc > THR
    per = {"last": lambda: r * r[i, T - 1],
           "win": lambda: r[i, ie_max(0, t - 2):t + 1].mean(0) * r,
           "dcs": lambda: r[i, 0:T].discounted_cum_sum(0.9, dim=0) * r,
           "cum": lambda: r[i, 0:T].cumsum(0).index(0, t) * r,
           "mean": lambda: r[i, 0:T].mean(0) * r,
           "max": lambda: r[i, 0:T].max(dim=0)[0] * r}[term]()
    per[i, 0:T].sum(0).backward()
    w.grad[0:I].sink_udf(lambda v: out.__setitem__("g", np.asarray(v).copy()))
ctx.compile({I: 2, T: (MAXT, done)}).execute()
want = []
for k in range(2):
    wt = torch.tensor(1.5, requires_grad=True)
    r = torch.tensor(X[k]) * wt
    acc = np.cumsum(X[k] * 1.5)
    n = next((j + 1 for j in range(MAXT) if acc[j] > THR), MAXT)
    r = r[:n]
    f = {"last": lambda: r * r[n - 1],
         "win": lambda: torch.stack([r[max(0, j - 2):j + 1].mean() for j in range(n)]) * r,
         "dcs": lambda: torch.stack([sum(0.9 ** m * r[j + m] for m in range(n - j))
                                     for j in range(n)]) * r,
         "cum": lambda: torch.cumsum(r, 0) * r, "mean": lambda: r.mean() * r,
         "max": lambda: r.max() * r}[term]()
    f.sum().backward()
    want.append(float(wt.grad))
print(term, out["g"], want, "ok" if np.allclose(out["g"], want, atol=1e-4) else "WRONG")
