"""Rarer op families applied inside recurrences / on temporal slices, vs numpy/torch:
a histogram recurrence built by scatter_add of a per-t class index (cnt[t+1] =
cnt.scatter_add(0, idx[t+1], ones)), index_add into a recurrence, conv1d of the whole
series x[0:T] (as (1, T) input) with a (1,1,3) kernel and padding 1, discounted_cum_sum of a
(b, 0:T) slice keeping the symbolic dim, discounted_sum, stack of three clamped shifted reads
(x[t-1], x, x[t+1]) -> (3, D), cat of a growing slice with a const row, repeat_interleave and
dilate of a point, chunk of a window, gather along dim 1 with a time-varying index, exp2 /
exp10 / log_base / erf / softplus(beta=2) / mish / elu / leakyrelu / normalize on a point,
cross_entropy of softmax probabilities, round/trunc/ceil of negative values, clip with only
an upper bound."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_, T_, D_ = 2, 5, 4

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    import tempo.api.recurrent_tensor as tpo
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(7)
    X = rng.normal(size=(B_, T_, D_)).astype(np.float32)
    CLS = rng.integers(0, D_, size=(T_,))
    R = rng.uniform(size=(B_, T_)).astype(np.float32)
    GI = rng.integers(0, D_, size=(T_, 2, D_))
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        di = dtypes.default_int
        x = RT.const(X).index(0, b).index(0, t)                       # (D,)
        idx = RT.const(CLS).cast(di).index(0, t).unsqueeze(0)          # (1,)
        cnt = RT.placeholder((D_,), dtypes.float32, domain=(t,))
        cnt[0] = RT.zeros((D_,)).scatter_add(0, idx, RT.ones((1,)))
        cnt[t + 1] = cnt.scatter_add(0, idx[t + 1], RT.ones((1,)))
        acc = RT.placeholder((D_,), dtypes.float32, domain=(b, t))
        acc[b, 0] = x
        acc[b, t + 1] = acc.index_add(0, idx[t + 1], x[b, t + 1].index(0, 0).unsqueeze(0) * 10.0)
        series = x.index(0, 0)[b, 0:T].unsqueeze(0)                   # (1, T) over b
        cv = tpo.conv1d(series, RT.const(np.array([[[0.5, -1.0, 2.0]]], np.float32)), padding=1)
        r = RT.const(R).index(0, b).index(0, t)
        dcs = r[b, 0:T].discounted_cum_sum(0.9)                       # domain (b, t)
        ds = r[b, 0:T].discounted_sum(0.5)                            # domain (b,)
        st = RT.stack([x[b, ie.max(t - 1, 0)], x, x[b, ie.min(t + 1, T - 1)]], dim=0)   # (3, D)
        ct = RT.cat(x[b, 0:t + 1], RT.ones((1, D_)) * 7.0, dim=0).sum(0)                 # (D,)
        ri = x.repeat_interleave(2, 0)                                 # (2D,)
        dl = x.dilate((2,))                                            # (2D-1,)
        ch = x[b, ie.max(t - 1, 0):t + 1].sum(0).chunk(2, 0)[1]        # (2,)
        gi = RT.const(GI).cast(di).index(0, t)                         # (2, D)
        ga = (x.unsqueeze(0).expand((2, D_))).gather(1, gi)           # (2, D)
        ew = (x.exp2() + x.exp10() * 0.01 + tpo.log_base(3.0, x.abs() + 1.0) + x.erf()
              + x.softplus(2) + x.mish() + x.elu(0.5) + x.leakyrelu(0.2)
              + x.normalize(0.5, 2.0))
        pr = x.softmax(0)
        ce = tpo.cross_entropy(pr, RT.ones((D_,)) / float(D_))
        rn = (x * 3.0).round() + (x * 3.0).trunc() * 10.0 + (x * 3.0).ceil() * 100.0
        cl = x.clip(ub=0.25)
        cnt[0:T].sink_udf(grab(s, "cnt"))
        cv.sink_udf(grab(s, "cv")) if False else cv[0:B].sink_udf(grab(s, "cv"))
        ds[0:B].sink_udf(grab(s, "ds"))
        for nm, v in dict(acc=acc, dcs=dcs, st=st, ct=ct, ri=ri, dl=dl, ch=ch, ga=ga, ew=ew,
                          ce=ce, rn=rn, cl=cl).items():
            v[0:B, 0:T].sink_udf(grab(s, nm))
    ctx.compile({B: B_, T: T_}).execute()
    rf = {}
    cnt = np.zeros((T_, D_), np.float32); c = np.zeros(D_)
    for tt in range(T_):
        c[CLS[tt]] += 1; cnt[tt] = c
    rf["cnt"] = cnt
    acc = np.zeros_like(X)
    for bb in range(B_):
        a = X[bb, 0].copy(); acc[bb, 0] = a
        for tt in range(1, T_):
            a = a.copy(); a[CLS[tt]] += X[bb, tt, 0] * 10.0; acc[bb, tt] = a
    rf["acc"] = acc
    rf["cv"] = torch.nn.functional.conv1d(torch.tensor(X[:, :, 0]).unsqueeze(1),
                                          torch.tensor([[[0.5, -1.0, 2.0]]]), padding=1).numpy()
    dcs = np.zeros_like(R)
    for tt in reversed(range(T_)):
        dcs[:, tt] = R[:, tt] + (0.9 * dcs[:, tt + 1] if tt < T_ - 1 else 0)
    rf["dcs"] = dcs
    rf["ds"] = (R * 0.5 ** np.arange(T_)).sum(1)
    rf["st"] = np.stack([np.stack([X[:, max(tt - 1, 0)], X[:, tt], X[:, min(tt + 1, T_ - 1)]], 1) for tt in range(T_)], 1)
    rf["ct"] = np.cumsum(X, 1) + 7.0
    rf["ri"] = np.repeat(X, 2, axis=2)
    dl = np.zeros((B_, T_, 2 * D_ - 1), np.float32); dl[..., ::2] = X; rf["dl"] = dl
    ws = np.stack([X[:, max(tt - 1, 0):tt + 1].sum(1) for tt in range(T_)], 1)
    rf["ch"] = ws[..., 2:]
    rf["ga"] = np.stack([np.stack([np.take_along_axis(np.broadcast_to(X[bb, tt], (2, D_)), GI[tt], 1)
                                   for tt in range(T_)]) for bb in range(B_)])
    xt = torch.tensor(X)
    ew = (2 ** xt + 10 ** xt * 0.01 + torch.log(xt.abs() + 1) / np.log(3.0) + torch.erf(xt)
          + torch.nn.functional.softplus(xt, beta=2) + torch.nn.functional.mish(xt)
          + torch.nn.functional.elu(xt, 0.5) + torch.nn.functional.leaky_relu(xt, 0.2)
          + (xt - 0.5) / (2.0 + 1e-8))
    rf["ew"] = ew.numpy()
    pr = torch.softmax(xt, -1)
    rf["ce"] = (-(torch.ones(D_) / D_ * torch.log(pr)).sum(-1)).numpy()
    x3 = X * 3.0
    rf["rn"] = np.round(x3) + np.trunc(x3) * 10 + np.ceil(x3) * 100
    rf["cl"] = np.minimum(X, 0.25)
    return [(k, s[k], rf[k], 2e-4 * max(1.0, float(np.abs(rf[k]).max()))) for k in rf]
