"""Spatial + temporal index combinations over (b, t) with spatial (C, D) = (3, 4), vs numpy:
x[b, 0:t+1, 1] (growing slice then a spatial int: numpy semantics §7.7), x[0:B, t, :, 2],
x[b, -2] (T-2), x[-1, t] (B-1), x[..., 1:3] (spatial slice of the last dim via ...),
x[b, t, -1] (negative spatial int), x[b, t, 1, -1], a tensor-valued spatial index
x[b, t, idx] with idx an int RT over t, x[b, ie.max(t-1,0), 0:2, 1:4], x[0:B, 0:T] full then
.sum over the batch dim and a spatial dim, shift sugar on two dims at once (y[b+1, t+1]),
a recurrence running backwards over b (y[B-1, t] base, y[b, t] reads y[b+1, t]),
a guarded future read (z[t < T-1] = x[t+1]) and sinks of the corner slices x[0:B, T-1]
and x[B-1, 0:T]."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

B_, T_, C_, D_ = 3, 4, 3, 4

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    X = np.arange(B_ * T_ * C_ * D_, dtype=np.float32).reshape(B_, T_, C_, D_) * 0.25
    IDX = np.array([2, 0, 1, 1])
    s = {}
    with ctx:
        x = RT.const(X).index(0, b).index(0, t)                 # (C, D) over (b, t)
        a = x[b, 0:t + 1, 1]                                    # (t+1, D)
        a_s = a.sum(0)
        c = x[0:B, t, :, 2]                                     # (B, C) over t
        d = x[b, -2]                                            # (C, D) over b
        e = x[-1, t]                                            # (C, D) over t
        f = x[..., 1:3]                                         # (C, 2) over (b, t)
        g = x[b, t, -1]                                         # (D,)
        h = x[b, t, 1, -1]                                      # ()
        idx = RT.const(IDX).cast(dtypes.default_int).index(0, t)
        k = x[b, t, idx]                                        # (C,)? index dim 0 by scalar -> (D,)
        m = x[b, ie.max(t - 1, 0), 0:2, 1:4]                    # (2, 3)
        full = x[0:B, 0:T].sum((0, 3))                          # (T, C)
        y = RT.placeholder((), dtypes.float32, domain=(b, t))
        y[0, t] = x[0, t, 0, 0]
        y[b, 0] = x[b, 0, 0, 0]
        y[b + 1, t + 1] = y + 1.0                               # y[b,t] = y[b-1,t-1] + 1
        r = RT.placeholder((), dtypes.float32, domain=(b, t))
        r[B - 1, t] = x[B - 1, t, 0, 0]
        r[True] = r[b + 1, t] * 0.5 + x[b, t, 0, 1]
        z = RT.placeholder((C_, D_), dtypes.float32, domain=(b, t))
        z[t < T - 1] = x[b, t + 1]
        z[True] = x * -1.0
        a_s[0:B, 0:T].sink_udf(grab(s, "a_s"))
        c[0:T].sink_udf(grab(s, "c"))
        d[0:B].sink_udf(grab(s, "d"))
        e[0:T].sink_udf(grab(s, "e"))
        for nm, v in dict(f=f, g=g, h=h, k=k, m=m, y=y, r=r, z=z).items():
            v[0:B, 0:T].sink_udf(grab(s, nm))
        full.sink_udf(grab(s, "full"))
        x[0:B, T - 1].sink_udf(grab(s, "corner_b"))
        x[B - 1, 0:T].sink_udf(grab(s, "corner_t"))
    ctx.compile({B: B_, T: T_}).execute()
    rf = {}
    rf["a_s"] = np.stack([[X[bb, :tt + 1, 1].sum(0) for tt in range(T_)] for bb in range(B_)])
    rf["c"] = np.stack([X[:, tt, :, 2] for tt in range(T_)])
    rf["d"] = X[:, T_ - 2]
    rf["e"] = X[B_ - 1]
    rf["f"] = X[..., 1:3]
    rf["g"] = X[:, :, -1]
    rf["h"] = X[:, :, 1, -1]
    rf["k"] = np.stack([[X[bb, tt, IDX[tt]] for tt in range(T_)] for bb in range(B_)])
    rf["m"] = np.stack([[X[bb, max(tt - 1, 0), 0:2, 1:4] for tt in range(T_)] for bb in range(B_)])
    rf["full"] = X.sum((0, 3))
    y = np.zeros((B_, T_), np.float32)
    for bb in range(B_):
        for tt in range(T_):
            y[bb, tt] = X[0, tt, 0, 0] if bb == 0 else (X[bb, 0, 0, 0] if tt == 0 else y[bb - 1, tt - 1] + 1)
    rf["y"] = y
    r = np.zeros((B_, T_), np.float32)
    for bb in reversed(range(B_)):
        r[bb] = X[bb, :, 0, 0] if bb == B_ - 1 else r[bb + 1] * 0.5 + X[bb, :, 0, 1]
    rf["r"] = r
    z = -X.copy()
    z[:, :T_ - 1] = X[:, 1:]
    rf["z"] = z
    rf["corner_b"] = X[:, T_ - 1]
    rf["corner_t"] = X[B_ - 1]
    return [(k, s[k], rf[k], 1e-4 * max(1.0, float(np.abs(rf[k]).max()))) for k in rf]
