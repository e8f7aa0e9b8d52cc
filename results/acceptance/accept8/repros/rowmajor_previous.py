"""accept8 finding: a running sum over all points of (b, t) in row-major order via
`x.previous` (API 3.2: self[domain.lex_prev_expr], wrap-around from (b, T-1) to (b+1, 0)).
usage: rowmajor_previous.py [torch|jax|numpy] [prev|next]"""
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext  # noqa: E402
from tempo.core.configs import ExecutionConfig  # noqa: E402
from tempo.core.dtype import dtypes  # noqa: E402

be = sys.argv[1] if len(sys.argv) > 1 else "torch"
kind = sys.argv[2] if len(sys.argv) > 2 else "prev"
B_, T_ = 3, 4
X = np.arange(1, B_ * T_ + 1, dtype=np.float32).reshape(B_, T_)
ctx = TempoContext(ExecutionConfig(dev="cpu", backend=be), dim_names=("b", "t"))
(b, B), (t, T) = ctx.variables_and_bounds
out = {}
with ctx:
    v = RT.const(X).index(0, b).index(0, t)
    x = RT.placeholder((), dtypes.float32, domain=(b, t))
    if kind == "prev":
        x.init = v
        x[True] = x.previous + v
        want = np.cumsum(X.ravel()).reshape(B_, T_)
    else:
        x[B - 1, T - 1] = v
        x[True] = x.next_ + v
        want = np.cumsum(X.ravel()[::-1])[::-1].reshape(B_, T_)
    x[0:B, 0:T].sink_udf(lambda a: out.__setitem__("x", np.asarray(a)))
ctx.compile({B: B_, T: T_}).execute()
print(out["x"])
print("ok" if np.allclose(out["x"], want) else f"WRONG, want\n{want}")
