import sys, dataclasses, numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core import index_expr as ie
from tempo.core.dtype import dtypes
from tempo.core.configs import ExecutionConfig
which = sys.argv[1].split(",")
cfg = ExecutionConfig(dev="cpu", backend="torch", enable_vectorization=False)
ctx = TempoContext(cfg, dim_names=("i", "t"))
(i, I), (t, T) = ctx.variables_and_bounds
X = np.arange(15, dtype=np.float32).reshape(3, 5)
with ctx:
    x = RT.const(X).index(0, i).index(0, t)
    outs = {}
    if "prev" in which: outs["prev"] = x[i, ie.max(t - 1, 0)]
    if "grow" in which: outs["grow"] = x[i, 0:t + 1].sum(0)
    if "shrink" in which: outs["shrink"] = x[i, t:T].sum(0)
    if "win" in which: outs["win"] = x[i, ie.max(0, t - 2):t + 1].mean(0)
    if "fut" in which: outs["fut"] = x[i, t:ie.min(t + 3, T)].sum(0)
    if "p" in which: outs["p"] = x.previous
    if "nx" in which: outs["nx"] = x.next_
    if "z" in which:
        z = RT.placeholder((), dtypes.float32, domain=(i, t))
        z.init = RT.const(7.0)
        z[True] = z.previous + x
        outs["z"] = z
    if "h" in which:
        h = RT.placeholder((), dtypes.float32, domain=(i, t))
        h[i, 0] = x * 0.0 + RT.from_symbol(i).cast(dtypes.float32)
        h[t == 3] = x * 100.0
        h[t > 1000] = x * -1.0
        h[i, t + 1] = h * 0.5 + x[i, t]
        outs["h"] = h
    if "g" in which:
        g = RT.placeholder((), dtypes.float32, domain=(i, t))
        with ctx.when(i > 0):
            g[t < 2] = x * 2.0
        g[True] = x * 3.0
        outs["g"] = g
    if "q" in which:
        q = RT.placeholder((), dtypes.float32, domain=(t,))
        q[0] = RT.const(1.0)
        q[1] = RT.const(2.0)
        q[t + 2] = q + q[t + 1]
        q[0:T].sink_udf(lambda a: None)
    if "acc" in which:
        acc = RT.placeholder((), dtypes.float32, domain=(i,))
        acc[0] = RT.const(0.0)
        acc[i + 1] = acc + x[i, 0:T].sum(0)
        acc[0:I].sink_udf(lambda a: None)
    if "last" in which:
        (x[i, T - 1] + x[i, -1])[0:I].sink_udf(lambda a: None)
    for k, v in outs.items():
        v[1:I - 1, 0:T].sink_udf(lambda a: None) if k in ("p", "nx") else v[0:I, 0:T].sink_udf(lambda a: None)
ctx.compile({I: 3, T: 5}).execute()
print("ok", which)
