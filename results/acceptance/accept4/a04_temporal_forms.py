"""§3.4/§3.5 temporal indexing forms over (i, t), vs numpy loops: x[t-1] with ie.max boundary,
growing 0:t+1, shrinking t:T, window max(0,t-2):t+1, future window t:min(t+3,T), x[T-1], x[-1],
x.previous / next_ / init (assignable), branches with first-true-wins, when(), domain_ctx,
x[i, 0] / x[0] keys, 2-D lex predecessor, a shift by 2 (t+2) sugar, reading a recurrence at i-1."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

I_, T_ = 3, 5

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    s = {}
    X = (np.arange(I_ * T_, dtype=np.float32).reshape(I_, T_) * 0.5 + 1.0) ** 1.3
    with ctx:
        x = RT.const(X).index(0, i).index(0, t)            # scalar over (i, t)
        prev = x[i, ie.max(t - 1, 0)]
        grow = x[i, 0:t + 1].sum(0)
        shrink = x[i, t:T].sum(0)
        win = x[i, ie.max(0, t - 2):t + 1].mean(0)
        fut = x[i, t:ie.min(t + 3, T)].sum(0)
        last = x[i, T - 1] + x[i, -1]
        p = x.previous           # lex prev over (i, t) with wrap
        nx = x.next_
        # recurrence with several branches; first true wins
        h = RT.placeholder((), dtypes.float32, domain=(i, t))
        h[i, 0] = x * 0.0 + RT.from_symbol(i).cast(dtypes.float32)
        h[t == 3] = x * 100.0                                # overrides the shift at t == 3
        h[t > 1000] = x * -1.0                               # never
        h[i, t + 1] = h * 0.5 + x[i, t]                      # h[i,t] = 0.5 h[i,t-1] + x[i,t-1]
        # when(): guard a branch
        g = RT.placeholder((), dtypes.float32, domain=(i, t))
        with ctx.when(i > 0):
            g[t < 2] = x * 2.0
        g[True] = x * 3.0
        # init assignable, domain_ctx default domain
        with ctx.domain_ctx((i, t)):
            z = RT.placeholder((), dtypes.float32)
        z.init = RT.const(7.0)
        z[True] = z.previous + x     # 2-D lex predecessor: wraps over i
        # shift by 2
        q = RT.placeholder((), dtypes.float32, domain=(t,))
        q[0] = RT.const(1.0)
        q[1] = RT.const(2.0)
        q[t + 2] = q + q[t + 1]      # fibonacci: q[t] = q[t-2] + q[t-1]
        # read across iterations: total of previous iteration's row
        acc = RT.placeholder((), dtypes.float32, domain=(i,))
        acc[0] = RT.const(0.0)
        acc[i + 1] = acc + x[i, 0:T].sum(0)
        for k, v in dict(prev=prev, grow=grow, shrink=shrink, win=win, fut=fut, h=h, g=g, z=z).items():
            v[0:I, 0:T].sink_udf(grab(s, k))
        last[0:I].sink_udf(grab(s, "last"))
        p[1:I, 0:T].sink_udf(grab(s, "p"))
        nx[0:I - 1, 0:T].sink_udf(grab(s, "nx"))
        q[0:T].sink_udf(grab(s, "q"))
        acc[0:I].sink_udf(grab(s, "acc"))
    ctx.compile({I: I_, T: T_}).execute()
    r = {}
    r["prev"] = np.stack([[X[a, max(b - 1, 0)] for b in range(T_)] for a in range(I_)])
    r["grow"] = np.cumsum(X, 1)
    r["shrink"] = np.cumsum(X[:, ::-1], 1)[:, ::-1]
    r["win"] = np.stack([[X[a, max(0, b - 2):b + 1].mean() for b in range(T_)] for a in range(I_)])
    r["fut"] = np.stack([[X[a, b:min(b + 3, T_)].sum() for b in range(T_)] for a in range(I_)])
    r["last"] = 2 * X[:, -1]
    flat = X.ravel()
    r["p"] = np.stack([flat[a * T_ - 1 + np.arange(T_)] for a in range(1, I_)])
    r["nx"] = np.stack([flat[a * T_ + 1 + np.arange(T_)] for a in range(0, I_ - 1)])
    h = np.zeros((I_, T_), np.float32)
    for a in range(I_):
        for b in range(T_):
            h[a, b] = a if b == 0 else (X[a, b] * 100 if b == 3 else 0.5 * h[a, b - 1] + X[a, b - 1])
    r["h"] = h
    r["g"] = np.where((np.arange(I_)[:, None] > 0) & (np.arange(T_)[None] < 2), 2 * X, 3 * X)
    z = np.zeros(I_ * T_, np.float32)
    for k in range(I_ * T_):
        z[k] = 7.0 if k == 0 else z[k - 1] + flat[k]
    r["z"] = z.reshape(I_, T_)
    q = [1.0, 2.0]
    while len(q) < T_:
        q.append(q[-1] + q[-2])
    r["q"] = np.array(q, np.float32)
    r["acc"] = np.concatenate([[0.0], np.cumsum(X.sum(1))[:-1]]).astype(np.float32)
    return [(k, s[k], r[k], 1e-3 * max(1.0, float(np.abs(r[k]).max()))) for k in r]
