"""Multi-dim domains (b, i, t) with reads across dims, vs numpy loops:
a DP grid over (i, t) reading both the previous row and previous column (edit-distance-like
min recurrence), a recurrence over t that reads the previous iteration's last value
x[b, i-1, T-1], a backwards recurrence over t inside each (b, i) whose base reads the forward
one, a read across b (neighbour batch element, ie.max clamp), a per-i reduction over (b, t)
slices, and a recurrence over i of a (b)-slice sum."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

B_, I_, T_ = 2, 3, 4

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    ctx = TempoContext(cfg, dim_names=("b", "i", "t"))
    (b, B), (i, I), (t, T) = ctx.variables_and_bounds
    rng = np.random.default_rng(5)
    X = rng.uniform(0.5, 1.5, size=(B_, I_, T_)).astype(np.float32)
    s = {}
    with ctx:
        x = RT.const(X).index(0, b).index(0, i).index(0, t)          # scalar over (b, i, t)
        # 1. DP grid over (i, t) per b: d[i,t] = x + min(d[i-1,t], d[i,t-1]), edges only one side
        d = RT.placeholder((), dtypes.float32, domain=(b, i, t))
        d[b, 0, 0] = x
        d[b, 0, t + 1] = d + x[b, 0, t + 1]
        d[b, i + 1, 0] = d + x[b, i + 1, 0]
        d[True] = RT.minimum(d[b, i - 1, t], d[b, i, t - 1]) + x
        # 2. carry across iterations: h[b,i,0] = h[b,i-1,T-1] (i>0) else 1, h[b,i,t+1] = 0.5 h + x
        h = RT.placeholder((), dtypes.float32, domain=(b, i, t))
        h[b, 0, 0] = RT.const(1.0)
        h[b, i, 0] = h[b, i - 1, T - 1]
        h[b, i, t + 1] = h * 0.5 + x
        # 3. backwards recurrence whose base reads the forward one
        g = RT.placeholder((), dtypes.float32, domain=(b, i, t))
        g[b, i, T - 1] = h
        g[True] = h - 0.25 * g[b, i, t + 1]
        # 4. read across b (neighbour, clamped)
        nb = x[ie.max(b - 1, 0), i, t] + 2.0 * x[ie.min(b + 1, B - 1), i, t]
        # 5. per-i reduction over (b, t)
        tot = x[0:B, i, 0:T].sum((0, 1))
        # 6. recurrence over i of per-i sums of h over b at the last t
        acc = RT.placeholder((), dtypes.float32, domain=(i,))
        acc[0] = h[0:B, 0, T - 1].sum(0)
        acc[i + 1] = acc * 0.5 + h[0:B, i + 1, T - 1].sum(0)
        for k, v in dict(d=d, h=h, g=g, nb=nb).items():
            v[0:B, 0:I, 0:T].sink_udf(grab(s, k))
        tot[0:I].sink_udf(grab(s, "tot"))
        acc[0:I].sink_udf(grab(s, "acc"))
    ctx.compile({B: B_, I: I_, T: T_}).execute()
    r = {}
    d = np.zeros_like(X)
    for bb in range(B_):
        for ii in range(I_):
            for tt in range(T_):
                if ii == 0 and tt == 0:
                    d[bb, ii, tt] = X[bb, ii, tt]
                elif ii == 0:
                    d[bb, ii, tt] = d[bb, ii, tt - 1] + X[bb, ii, tt]
                elif tt == 0:
                    d[bb, ii, tt] = d[bb, ii - 1, tt] + X[bb, ii, tt]
                else:
                    d[bb, ii, tt] = min(d[bb, ii - 1, tt], d[bb, ii, tt - 1]) + X[bb, ii, tt]
    r["d"] = d
    h = np.zeros_like(X)
    for bb in range(B_):
        for ii in range(I_):
            for tt in range(T_):
                if tt == 0:
                    h[bb, ii, tt] = 1.0 if ii == 0 else h[bb, ii - 1, T_ - 1]
                else:
                    h[bb, ii, tt] = 0.5 * h[bb, ii, tt - 1] + X[bb, ii, tt - 1]
    r["h"] = h
    g = np.zeros_like(X)
    for tt in reversed(range(T_)):
        g[:, :, tt] = h[:, :, tt] if tt == T_ - 1 else h[:, :, tt] - 0.25 * g[:, :, tt + 1]
    r["g"] = g
    r["nb"] = X[np.maximum(np.arange(B_) - 1, 0)] + 2 * X[np.minimum(np.arange(B_) + 1, B_ - 1)]
    r["tot"] = X.sum((0, 2))
    acc = np.zeros(I_, np.float32)
    for ii in range(I_):
        v = h[:, ii, T_ - 1].sum()
        acc[ii] = v if ii == 0 else 0.5 * acc[ii - 1] + v
    r["acc"] = acc
    return [(k, s[k], r[k], 1e-4 * max(1.0, float(np.abs(r[k]).max()))) for k in r]
