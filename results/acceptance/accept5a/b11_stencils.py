"""Stencils: windows over the non-temporal dim and 2-D windows, vs numpy. A heat equation
u[b, t+1] = mean(u[max(0,b-1):min(B,b+2), t]) (each step reads a clamped window over b of the
previous step), a 2-D window sum x[max(0,b-1):b+1, max(0,t-2):t+1] (shape (<=2, <=3)), a
cellular automaton over (b, t) with int8 states (rule: s[b,t+1] = (s[b-1,t] + s[b,t] +
s[b+1,t]) % 2 with zero borders through where), a running max over b computed as a
recurrence over b inside each t (m[b+1, t] = max(m, x[b+1, t])), and a per-t softmax over
the whole batch slice x[0:B, t]."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

B_, T_ = 5, 4

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    rng = np.random.default_rng(4)
    U0 = rng.uniform(size=(B_,)).astype(np.float32)
    X = rng.normal(size=(B_, T_)).astype(np.float32)
    S0 = np.array([0, 1, 0, 1, 1], np.int8)
    s = {}
    with ctx:
        u = RT.placeholder((), dtypes.float32, domain=(b, t))
        u[b, 0] = RT.const(U0).index(0, b)
        u[b, t + 1] = u[ie.max(0, b - 1):ie.min(B, b + 2), t].mean(0)
        x = RT.const(X).index(0, b).index(0, t)
        w2 = x[ie.max(0, b - 1):b + 1, ie.max(0, t - 2):t + 1].sum((0, 1))
        ca = RT.placeholder((), dtypes.int8, domain=(b, t))
        ca[b, 0] = RT.const(S0).index(0, b)
        left = (RT.from_symbol(b) > 0).where(ca[ie.max(b - 1, 0), t], RT.const(0, dtype=dtypes.int8))
        right = (RT.from_symbol(b) < B - 1).where(ca[ie.min(b + 1, B - 1), t], RT.const(0, dtype=dtypes.int8))
        ca[b, t + 1] = (left + ca + right) % 2
        m = RT.placeholder((), dtypes.float32, domain=(b, t))
        m[0, t] = x[0, t]
        m[b + 1, t] = RT.maximum(m, x[b + 1, t])
        sm = x[0:B, t].softmax(0)
        for k, v in dict(u=u, w2=w2, ca=ca, m=m).items():
            v[0:B, 0:T].sink_udf(grab(s, k))
        sm[0:T].sink_udf(grab(s, "sm"))
    ctx.compile({B: B_, T: T_}).execute()
    r = {}
    u = np.zeros((B_, T_), np.float32); u[:, 0] = U0
    for tt in range(1, T_):
        for bb in range(B_):
            u[bb, tt] = u[max(0, bb - 1):min(B_, bb + 2), tt - 1].mean()
    r["u"] = u
    r["w2"] = np.array([[X[max(0, bb - 1):bb + 1, max(0, tt - 2):tt + 1].sum() for tt in range(T_)] for bb in range(B_)])
    ca = np.zeros((B_, T_), np.int8); ca[:, 0] = S0
    for tt in range(1, T_):
        p = np.concatenate([[0], ca[:, tt - 1], [0]])
        ca[:, tt] = (p[:-2] + p[1:-1] + p[2:]) % 2
    r["ca"] = ca
    r["m"] = np.maximum.accumulate(X, axis=0)
    e = np.exp(X - X.max(0)); r["sm"] = (e / e.sum(0)).T
    return [(k, s[k], r[k], 1e-5 * max(1.0, float(np.abs(r[k]).max()))) for k in r]
