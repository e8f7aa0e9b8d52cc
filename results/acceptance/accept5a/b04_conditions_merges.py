"""Branch conditions and merges over (b, t) vs numpy: parity conditions (t % 2 == 0), | and
~ of index conditions, a condition on the bound (t >= T - 2), nested ctx.when (conjunction)
with an index-sequence key inside, a branch keyed by b (x[1, t]), a piecewise index expression
as a temporal read (ie.piecewise), ie.Min/Max of three operands in a read, a merge whose
branches read another merge at t-1 and t+1 (both defined everywhere), a merge branch valued
by a Python scalar (float placeholder, float literal), a merge valued by an index expression
(t * 2 + b), and x.init assignment on a 2-D domain."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

B_, T_ = 3, 6

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    X = (np.arange(B_ * T_, dtype=np.float32).reshape(B_, T_) + 1.0) * 0.5
    s = {}
    with ctx:
        x = RT.const(X).index(0, b).index(0, t)
        p = RT.placeholder((), dtypes.float32, domain=(b, t))
        p[(t % 2 == 0) | (b == 2)] = x * 2.0
        p[~(t < T - 2)] = x * -1.0
        p[True] = x
        q = RT.placeholder((), dtypes.float32, domain=(b, t))
        with ctx.when(b > 0):
            with ctx.when(t > 1):
                q[b, 3] = x * 10.0            # b > 0 & t > 1 & t == 3
                q[t < 5] = x * 20.0           # b > 0 & t > 1 & t < 5
            q[1, t] = x * 30.0                # b > 0 & b == 1
        q[True] = RT.const(-1.0)              # scalar-valued fallback (float literal const)
        pw = x[b, ie.piecewise([(t < 2, t + 1), (t < 4, t - 1), (True, T - 1 - t)])]
        m3 = x[b, ie.min(t + 2, T - 1, 2 * t)] + x[b, ie.max(t - 3, 0, b)]
        # two merges: f reads g at t-1, g reads f at t (same point) and t+1
        f = RT.placeholder((), dtypes.float32, domain=(b, t))
        f[b, 0] = x
        f[True] = x + 0.5 * f[b, t - 1]
        g = RT.placeholder((), dtypes.float32, domain=(b, t))
        g[b, T - 1] = f
        g[True] = f - f[b, t + 1] + 0.1 * g[b, t + 1]
        e = RT.placeholder((), dtypes.default_int, domain=(b, t))
        e[t == 0] = b + 100
        e[True] = t * 2 + b
        z = RT.placeholder((), dtypes.float32, domain=(b, t))
        z.init = RT.const(5.0)
        z[True] = z.previous * 0.5 + x
        for k, v in dict(p=p, q=q, pw=pw, m3=m3, f=f, g=g, e=e, z=z).items():
            v[0:B, 0:T].sink_udf(grab(s, k))
    ctx.compile({B: B_, T: T_}).execute()
    r = {k: np.zeros((B_, T_)) for k in ["p", "q", "pw", "m3", "f", "g", "e", "z"]}
    for bb in range(B_):
        for tt in range(T_):
            xv = X[bb, tt]
            r["p"][bb, tt] = 2 * xv if (tt % 2 == 0 or bb == 2) else (-xv if tt >= T_ - 2 else xv)
            if bb > 0 and tt > 1 and tt == 3:
                qv = 10 * xv
            elif bb > 0 and tt > 1 and tt < 5:
                qv = 20 * xv
            elif bb == 1:
                qv = 30 * xv
            else:
                qv = -1.0
            r["q"][bb, tt] = qv
            pi = tt + 1 if tt < 2 else (tt - 1 if tt < 4 else T_ - 1 - tt)
            r["pw"][bb, tt] = X[bb, pi]
            r["m3"][bb, tt] = X[bb, min(tt + 2, T_ - 1, 2 * tt)] + X[bb, max(tt - 3, 0, bb)]
            r["e"][bb, tt] = bb + 100 if tt == 0 else tt * 2 + bb
        for tt in range(T_):
            r["f"][bb, tt] = X[bb, tt] + (0.5 * r["f"][bb, tt - 1] if tt else 0.0)
        for tt in reversed(range(T_)):
            r["g"][bb, tt] = r["f"][bb, tt] if tt == T_ - 1 else (
                r["f"][bb, tt] - r["f"][bb, tt + 1] + 0.1 * r["g"][bb, tt + 1])
    flat = X.ravel(); z = np.zeros(B_ * T_)
    for k in range(B_ * T_):
        z[k] = 5.0 if k == 0 else 0.5 * z[k - 1] + flat[k]
    r["z"] = z.reshape(B_, T_)
    return [(k, s[k], r[k], 1e-4 * max(1.0, float(np.abs(r[k]).max()))) for k in r]
