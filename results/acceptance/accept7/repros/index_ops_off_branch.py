"""enable_index_ops=False (accept7 d06 flag run): a branch prev[True] = tg.index(0, t - 1)
(taken only where t >= 1) over (b, t), with tg.index(0, t) also read, fails on torch at run
time: 'the torch backend failed running the gather ...: index -1 is out of bounds'. The
merge is vectorised over t and reads its branch values as the slice 1:T, but the per-(b, t)
gather feeding it still runs at t = 0 (the executed domain is only cut where a read leaves
its source, and `_restrict_to_demand` only follows merge branches, not a batched merge's
slice read). With index ops on, IndexSelect's batching masks its index (Batching.addresses).
numpy and vectorisation off give the right values.
usage: python repros/index_ops_off_branch.py [torch|numpy|jax] [vec_on|vec_off]"""
import sys, warnings; warnings.simplefilter("ignore")
import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

be = sys.argv[1] if len(sys.argv) > 1 else "torch"
vec = (sys.argv[2] if len(sys.argv) > 2 else "vec_on") == "vec_on"
cfg = ExecutionConfig(dev="cpu", backend=be, enable_index_ops=False, enable_vectorization=vec)
ctx = TempoContext(cfg, dim_names=("b", "t"))
((b, B), (t, T)) = ctx.variables_and_bounds
tgt = np.array([[5, 7, 2, 4], [1, 3, 8, 6]])
out = {}
with ctx:
    tg = RT.const(tgt.astype(np.int64)).index(0, b)
    prev = RT.placeholder((), dtypes.default_int, domain=(b, t))
    prev[b, 0] = RT.const(0, dtype=dtypes.default_int)
    prev[True] = tg.index(0, t - 1).cast(dtypes.default_int)
    cur = tg.index(0, t).cast(dtypes.default_int)
    (prev + cur)[0:B, 0:T].sink_udf(lambda v: out.__setitem__("sum", np.asarray(v)))
    prev[0:B, 0:T].sink_udf(lambda v: out.__setitem__("prev", np.asarray(v)))
ctx.compile({B: 2, T: 4}).execute()
print(out["prev"], "want", [[0, 5, 7, 2], [0, 1, 3, 8]])
