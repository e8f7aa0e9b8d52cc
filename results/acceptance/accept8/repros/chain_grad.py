"""accept8 finding: gradients through a row-major running sum x[True] = x.previous + v.
usage: chain_grad.py [torch|jax|numpy] [prev|next]"""
import sys
import warnings

import numpy as np
import torch

warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext  # noqa: E402
from tempo.core.configs import ExecutionConfig  # noqa: E402
from tempo.core.dtype import dtypes  # noqa: E402

be = sys.argv[1] if len(sys.argv) > 1 else "torch"
kind = sys.argv[2] if len(sys.argv) > 2 else "prev"
B_, T_ = 2, 3
g = np.random.default_rng(0)
X = g.normal(size=(B_, T_)).astype(np.float32)
ctx = TempoContext(ExecutionConfig(dev="cpu", backend=be) if len(sys.argv) < 4 else __import__("dataclasses").replace(ExecutionConfig.test_cfg(), backend=be), dim_names=("b", "t"))
(b, B), (t, T) = ctx.variables_and_bounds
out = {}
with ctx:
    w = RT.const(np.float32(0.7), requires_grad=True)
    v = (RT.const(X).index(0, b).index(0, t) * w).tanh()
    x = RT.placeholder((), dtypes.float32, domain=(b, t))
    if kind == "prev":
        x.init = v
        x[True] = x.previous + v
    else:
        x[B - 1, T - 1] = v
        x[True] = x.next_ + v
    x[0:B, 0:T].sum().backward()
    w.grad.sink_udf(lambda a: out.__setitem__("g", np.asarray(a)))
ctx.compile({B: B_, T: T_}).execute()
wt = torch.tensor(0.7, requires_grad=True)
vt = torch.tanh(torch.tensor(X) * wt).reshape(-1)
c = torch.cumsum(vt, 0) if kind == "prev" else torch.flip(torch.cumsum(torch.flip(vt, [0]), 0), [0])
c.sum().backward()
print(out["g"], wt.grad.item(), "ok" if np.allclose(out["g"], wt.grad.item(), atol=1e-5) else "WRONG")
