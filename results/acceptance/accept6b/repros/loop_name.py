"""jax, vectorisation and fusion off: a window over two dims (b, t) inside a loop over i whose slice bounds use
the outer loop's b: NameError: name 'b' is not defined at compile (the loop analysis cached
the compiled bound expression before rejecting it, so the second use skipped the check)."""
import dataclasses
import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
cfg = ExecutionConfig(dev="cpu", backend="jax", enable_vectorization=False, enable_fusion=False)
X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
ctx = TempoContext(cfg, dim_names=("i", "b", "t"))
(i, I), (b, B), (t, T) = ctx.variables_and_bounds
out = {}
with ctx:
    x = RT.const(X).index(0, i).index(0, b).index(0, t)
    w = x[i, ie.max(0, b - 1):b + 1, ie.max(0, t - 1):t + 1].sum((0, 1))
    w[0:I, 0:B, 0:T].sink_udf(lambda v: out.setdefault("w", np.asarray(v)))
ctx.compile({I: 2, B: 3, T: 4}).execute()
want = np.array([[[X[k, max(0, i - 1):i + 1, max(0, j - 1):j + 1].sum() for j in range(4)] for i in range(3)] for k in range(2)])
print(np.abs(out["w"] - want).max())
