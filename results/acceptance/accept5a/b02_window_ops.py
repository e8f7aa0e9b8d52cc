"""Ops applied to temporal slices over (b, t) vs numpy: hand-written causal attention over
the growing slice k[b, 0:t+1] (matmul + softmax + matmul), a clamped window
x[b, max(0,t-2):t+1] fed to sort / std(correction=0) / logsumexp / argmax / flip+cumsum,
a future window x[b, t:min(t+3,T)] max, the shrinking slice x[b, t:T] cumprod along the
slice dim, mean over a window of 2-D points (slice dim + spatial reduce), a pad of the growing
slice, and the window's l_norm."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

B_, T_, D_ = 2, 6, 3

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    rng = np.random.default_rng(11)
    Q = rng.normal(size=(B_, T_, D_)).astype(np.float32)
    K = rng.normal(size=(B_, T_, D_)).astype(np.float32)
    V = rng.normal(size=(B_, T_, D_)).astype(np.float32)
    XS = rng.uniform(0.5, 1.5, size=(B_, T_)).astype(np.float32)
    s = {}
    with ctx:
        q = RT.const(Q).index(0, b).index(0, t)           # (D,) over (b, t)
        k = RT.const(K).index(0, b).index(0, t)
        v = RT.const(V).index(0, b).index(0, t)
        x = RT.const(XS).index(0, b).index(0, t)          # scalar over (b, t)
        kk = k[b, 0:t + 1]                                # (t+1, D)
        sc = (kk @ q) / float(np.sqrt(D_))                # (t+1,)
        w = sc.softmax(0)
        att = (w.unsqueeze(0) @ v[b, 0:t + 1])            # (D,)  (size-1 row squeezed)
        win = x[b, ie.max(0, t - 2):t + 1]
        srt, idx = win.sort(0, descending=True)
        top = srt.index(0, 0)
        sd = win.std(0, correction=0)
        lse = win.logsumexp(0)
        am = win.argmax(0)
        fc = win.flip(0).cumsum(0).index(0, 0)            # == last element of window
        fut = x[b, t:ie.min(t + 3, T)].max(0)[0]
        cp = x[b, t:T].cumprod(0).index(0, -1)            # product of the tail
        wm = q[b, ie.max(0, t - 1):t + 1].mean((0, 1))    # mean of (<=2, D)
        pg = x[b, 0:t + 1].pad(((1, 2),), value=5.0).sum(0)
        ln = win.l_norm(2, 0)
        for name, val in dict(att=att, top=top, sd=sd, lse=lse, am=am, fc=fc, fut=fut,
                              cp=cp, wm=wm, pg=pg, ln=ln).items():
            val[0:B, 0:T].sink_udf(grab(s, name))
    ctx.compile({B: B_, T: T_}).execute()
    r = {n: [] for n in ["att", "top", "sd", "lse", "am", "fc", "fut", "cp", "wm", "pg", "ln"]}
    for bb in range(B_):
        row = {n: [] for n in r}
        for tt in range(T_):
            sc = K[bb, :tt + 1] @ Q[bb, tt] / np.sqrt(D_)
            w = np.exp(sc - sc.max()); w /= w.sum()
            row["att"].append(w @ V[bb, :tt + 1])
            wn = XS[bb, max(0, tt - 2):tt + 1]
            row["top"].append(wn.max()); row["sd"].append(wn.std())
            row["lse"].append(np.log(np.exp(wn).sum())); row["am"].append(np.argmax(wn))
            row["fc"].append(wn[-1]); row["fut"].append(XS[bb, tt:min(tt + 3, T_)].max())
            row["cp"].append(np.prod(XS[bb, tt:])); row["wm"].append(Q[bb, max(0, tt - 1):tt + 1].mean())
            row["pg"].append(XS[bb, :tt + 1].sum() + 15.0); row["ln"].append(np.sqrt((wn ** 2).sum()))
        for n in r:
            r[n].append(row[n])
    out = []
    for n in r:
        want = np.array(r[n])
        tol = 0 if n == "am" else 1e-4 * max(1.0, float(np.abs(want).max()))
        out.append((n, s[n], want.astype(s[n].dtype) if n == "am" else want, tol))
    return out
