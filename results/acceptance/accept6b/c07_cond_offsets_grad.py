"""Merges whose branches read different time offsets, with gradients, over (b, t), vs torch:
x = tanh(X * w) (leaf w); y[t] by first-true branches: t < 2 -> x[t]; t % 3 == 0 ->
x[t-1] + x[t-2]; t >= T-2 -> x[T-1-t] * 2 (a reversed read); else y[t-1] * 0.5 + x[t+1]
(a self read one back and a future read); z under ctx.when(t >= 1) with an inner
ctx.when(b == 0) reading x[b, t-1] vs x[b, min(t+2, T-1)], and z[True] = x for the rest;
a where() whose branches read x at t and at max(t-3, 0) with a condition from y;
a piecewise index x[b, ie.piecewise(...)] (evens read t+1 capped, odds read t-1);
loss sums y, z and the where/piecewise values; w.grad vs torch autograd."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_, T_, H_ = 2, 7, 2


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(9)
    X = rng.normal(size=(B_, T_, H_)).astype(np.float32)
    Wn = rng.normal(size=(H_,)).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        w = RT.const(Wn, requires_grad=True)
        x = (RT.const(X).index(0, b).index(0, t) * w).tanh()
        y = RT.placeholder((H_,), dtypes.float32, domain=(b, t))
        y[t < 2] = x
        y[(t % 3).symb_eq(0)] = x[b, t - 1] + x[b, t - 2]
        y[t >= T - 2] = x[b, T - 1 - t] * 2.0
        y[True] = y[b, t - 1] * 0.5 + x[b, t + 1]
        z = RT.placeholder((H_,), dtypes.float32, domain=(b, t))
        with ctx.when(t >= 1):
            with ctx.when(b.symb_eq(0)):
                z[True] = x[b, t - 1] * 3.0
            z[True] = x[b, ie.min(t + 2, T - 1)] - 1.0
        z[True] = x
        wh = RT.where(y.sum() > 0.0, x, x[b, ie.max(t - 3, 0)] * -1.0)
        pw = x[b, ie.piecewise([((t % 2).symb_eq(0), ie.min(t + 1, T - 1)), (True, t - 1)])]
        per = (y * y).sum() + (z * y).sum() + (wh * pw).sum()
        loss = per[0:B, 0:T].sum((0, 1))
        loss.backward()
        for n, a in dict(y=y, z=z, wh=wh, pw=pw).items():
            a[0:B, 0:T].sink_udf(grab(st, n))
        w.grad.sink_udf(grab(st, "gw"))
    ctx.compile({B: B_, T: T_}).execute()
    wt = torch.tensor(Wn, requires_grad=True)
    xt = torch.tanh(torch.tensor(X) * wt)
    Y = [[None] * T_ for _ in range(B_)]; Z = [[None] * T_ for _ in range(B_)]
    WH = [[None] * T_ for _ in range(B_)]; PW = [[None] * T_ for _ in range(B_)]
    for bb in range(B_):
        for tt in range(T_):
            if tt < 2:
                Y[bb][tt] = xt[bb, tt]
            elif tt % 3 == 0:
                Y[bb][tt] = xt[bb, tt - 1] + xt[bb, tt - 2]
            elif tt >= T_ - 2:
                Y[bb][tt] = xt[bb, T_ - 1 - tt] * 2.0
            else:
                Y[bb][tt] = Y[bb][tt - 1] * 0.5 + xt[bb, tt + 1]
            if tt >= 1 and bb == 0:
                Z[bb][tt] = xt[bb, tt - 1] * 3.0
            elif tt >= 1:
                Z[bb][tt] = xt[bb, min(tt + 2, T_ - 1)] - 1.0
            else:
                Z[bb][tt] = xt[bb, tt]
            WH[bb][tt] = torch.where(Y[bb][tt].sum() > 0, xt[bb, tt], xt[bb, max(tt - 3, 0)] * -1.0)
            PW[bb][tt] = xt[bb, min(tt + 1, T_ - 1) if tt % 2 == 0 else tt - 1]
    st_ = lambda L: torch.stack([torch.stack(r) for r in L])
    Yt, Zt, WHt, PWt = st_(Y), st_(Z), st_(WH), st_(PW)
    loss = (Yt * Yt).sum() + (Zt * Yt).sum() + (WHt * PWt).sum()
    loss.backward()
    sc = lambda a: 2e-4 * max(1.0, float(np.abs(a).max()))
    out = [(n, st[n], a.detach().numpy(), sc(a.detach().numpy())) for n, a in dict(y=Yt, z=Zt, wh=WHt, pw=PWt).items()]
    return out + [("gw", st["gw"], wt.grad.numpy(), sc(wt.grad.numpy()))]
