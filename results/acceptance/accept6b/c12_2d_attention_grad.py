"""Attention over a two-dimensional window with gradients, over (b, t), vs torch autograd:
q = x Wq, k = x Wk (leaves Wq, Wk; x constant (B, T, D)); each point attends over
k[max(0, b-1):b+1, 0:t+1] (neighbouring sequences, the causal past: a (<=2, t+1, D) slice
flattened to (.., D) with a symbolic length), softmax over the flattened keys, values from
the same 2-D window; a recurrence backwards over b (r[B-1] = z, r[b] = z + 0.5 r[b+1]) of
the attended vectors' sums, reduced over t by a slice; loss = sum over t of r[0, t];
Wq.grad, Wk.grad vs torch."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_, T_, D_ = 3, 4, 3


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(31)
    X = rng.normal(size=(B_, T_, D_)).astype(np.float32)
    WQ = (rng.normal(size=(D_, D_)) * 0.5).astype(np.float32)
    WK = (rng.normal(size=(D_, D_)) * 0.5).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        wq = RT.const(WQ, requires_grad=True)
        wk = RT.const(WK, requires_grad=True)
        x = RT.const(X).index(0, b).index(0, t)
        q = x @ wq
        k = x @ wk
        kw = k[ie.max(0, b - 1):b + 1, 0:t + 1].flatten(0, 1)     # (n, D)
        vw = x[ie.max(0, b - 1):b + 1, 0:t + 1].flatten(0, 1)
        a = (kw @ q).softmax(0)
        z = (a.unsqueeze(0) @ vw).sum()
        r = RT.placeholder((), dtypes.float32, domain=(b, t))
        r[B - 1, t] = z
        r[True] = z + 0.5 * r[b + 1, t]
        loss = r[0, 0:T].sum(0)
        loss.backward()
        z[0:B, 0:T].sink_udf(grab(st, "z"))
        r[0:B, 0:T].sink_udf(grab(st, "r"))
        wq.grad.sink_udf(grab(st, "gq"))
        wk.grad.sink_udf(grab(st, "gk"))
    ctx.compile({B: B_, T: T_}).execute()
    wqt, wkt = torch.tensor(WQ, requires_grad=True), torch.tensor(WK, requires_grad=True)
    xt = torch.tensor(X)
    q, k = xt @ wqt, xt @ wkt
    Z = [[None] * T_ for _ in range(B_)]
    for bb in range(B_):
        for tt in range(T_):
            kw = k[max(0, bb - 1):bb + 1, :tt + 1].reshape(-1, D_)
            vw = xt[max(0, bb - 1):bb + 1, :tt + 1].reshape(-1, D_)
            Z[bb][tt] = (torch.softmax(kw @ q[bb, tt], 0) @ vw).sum()
    R = [[None] * T_ for _ in range(B_)]
    for bb in reversed(range(B_)):
        for tt in range(T_):
            R[bb][tt] = Z[bb][tt] + (0.5 * R[bb + 1][tt] if bb < B_ - 1 else 0.0)
    loss = sum(R[0])
    loss.backward()
    Zt = torch.tensor([[float(v) for v in row] for row in Z])
    Rt = torch.tensor([[float(v) for v in row] for row in R])
    sc = lambda a: 2e-4 * max(1.0, float(np.abs(a).max()))
    return [("z", st["z"], Zt.numpy(), sc(Zt.numpy())), ("r", st["r"], Rt.numpy(), sc(Rt.numpy())),
            ("gq", st["gq"], wqt.grad.numpy(), sc(wqt.grad.numpy())),
            ("gk", st["gk"], wkt.grad.numpy(), sc(wkt.grad.numpy()))]
