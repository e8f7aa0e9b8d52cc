"""Future reads feeding backward-in-time recurrences, then gradients through them, over
(b, t), vs torch autograd: rewards r = sigmoid(x . theta) and values v = x . phi (leaves),
dones d (constant bool); discounted returns G[b, T-1] = r, G = r + g (1 - d) G[b, t+1];
TD residual delta reading v[b, t+1] with a T-1 branch bootstrapping from a constant;
GAE A = delta + g l (1 - d) A[b, t+1]; the future-reward sum x[b, t:T] of r; the one-step
future read r[b, min(t+1, T-1)]; loss = mean_bt (A^2 + (G - v)^2) + sum of G[b, 0] + the future
sums; grads of theta and phi and the values of G, A, fut vs torch."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_, T_, H_ = 2, 7, 4
G_, L_ = 0.9, 0.8


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(4)
    X = rng.normal(size=(B_, T_, H_)).astype(np.float32)
    TH = rng.normal(size=(H_,)).astype(np.float32)
    PH = rng.normal(size=(H_,)).astype(np.float32)
    D = rng.uniform(size=(B_, T_)) < 0.25
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        th = RT.const(TH, requires_grad=True)
        ph = RT.const(PH, requires_grad=True)
        x = RT.const(X).index(0, b).index(0, t)
        nd = 1.0 - RT.const(D).index(0, b).index(0, t).cast(dtypes.float32)
        r = (x @ th).sigmoid()
        v = x @ ph
        G = RT.placeholder((), dtypes.float32, domain=(b, t))
        G[b, T - 1] = r
        G[True] = r + G_ * nd * G[b, t + 1]
        delta = RT.placeholder((), dtypes.float32, domain=(b, t))
        delta[b, T - 1] = r + G_ * nd * 0.5 - v
        delta[True] = r + G_ * nd * v[b, t + 1] - v
        A = RT.placeholder((), dtypes.float32, domain=(b, t))
        A[t == T - 1] = delta
        A[True] = delta + (G_ * L_) * nd * A[b, t + 1]
        fut = r[b, t:T].sum(0) + r[b, ie.min(t + 1, T - 1)]
        per = A * A + (G - v) * (G - v)
        loss = per[0:B, 0:T].mean((0, 1)) + G[0:B, 0].sum(0) + fut[0:B, 0:T].sum((0, 1)) * 0.01
        loss.backward()
        for n, z in dict(G=G, A=A, fut=fut).items():
            z[0:B, 0:T].sink_udf(grab(st, n))
        th.grad.sink_udf(grab(st, "gth"))
        ph.grad.sink_udf(grab(st, "gph"))
    ctx.compile({B: B_, T: T_}).execute()
    tht, pht = torch.tensor(TH, requires_grad=True), torch.tensor(PH, requires_grad=True)
    xt = torch.tensor(X); ndt = 1.0 - torch.tensor(D).float()
    r = torch.sigmoid(xt @ tht); v = xt @ pht
    Gs = [None] * T_; As = [None] * T_
    for tt in reversed(range(T_)):
        if tt == T_ - 1:
            Gs[tt] = r[:, tt]
            dl = r[:, tt] + G_ * ndt[:, tt] * 0.5 - v[:, tt]
            As[tt] = dl
        else:
            Gs[tt] = r[:, tt] + G_ * ndt[:, tt] * Gs[tt + 1]
            dl = r[:, tt] + G_ * ndt[:, tt] * v[:, tt + 1] - v[:, tt]
            As[tt] = dl + G_ * L_ * ndt[:, tt] * As[tt + 1]
    Gt, At = torch.stack(Gs, 1), torch.stack(As, 1)
    fut = torch.stack([r[:, tt:].sum(1) + r[:, min(tt + 1, T_ - 1)] for tt in range(T_)], 1)
    loss = (At ** 2 + (Gt - v) ** 2).mean() + Gt[:, 0].sum() + fut.sum() * 0.01
    loss.backward()
    sc = lambda a: 2e-4 * max(1.0, float(np.abs(a).max()))
    out = [(n, st[n], z.detach().numpy(), sc(z.detach().numpy())) for n, z in dict(G=Gt, A=At, fut=fut).items()]
    return out + [("gth", st["gth"], tht.grad.numpy(), sc(tht.grad.numpy())),
                  ("gph", st["gph"], pht.grad.numpy(), sc(pht.grad.numpy()))]
