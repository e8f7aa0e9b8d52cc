"""Three temporal dims (i, b, t) with recurrences on two of them and reductions over the third,
vs numpy loops: h[i, b, t+1] = 0.5 h + x[i, b, t+1] with base h[i, b, 0] = p[i]; p over i
carried by p[i+1] = p + mean_b h[i, 0:B, T-1] (a reduction over b of the previous iteration's
last step); q[i, b+1] = q + sum_t h[i, b, 0:T] (a recurrence over b of reductions over t);
c a backwards recurrence over i (c[I-1] = p, c[i] = p + 0.5 c[i+1]); m[i, t] = max over b
h[i, 0:B, t]; a window over b and t at once h[i, max(0,b-1):b+1, max(0,t-1):t+1].sum();
a full-domain read h[0:I, 0:B, 0:T] at the end; the gradient of sum(c) w.r.t. a leaf scale s
inside x (torch autograd)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

I_, B_, T_ = 3, 2, 4


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(7)
    X = rng.normal(size=(I_, B_, T_)).astype(np.float32)
    S = np.float32(0.7)
    ctx = TempoContext(cfg, dim_names=("i", "b", "t"))
    (i, I), (b, B), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        s = RT.const(S, requires_grad=True)
        x = RT.const(X).index(0, i).index(0, b).index(0, t) * s
        p = RT.placeholder((), dtypes.float32, domain=(i,))
        h = RT.placeholder((), dtypes.float32, domain=(i, b, t))
        p[0] = RT.const(1.0)
        p[i + 1] = p + h[i, 0:B, T - 1].mean(0)
        h[i, b, 0] = p
        h[i, b, t + 1] = 0.5 * h + x[i, b, t + 1]
        q = RT.placeholder((), dtypes.float32, domain=(i, b))
        q[i, 0] = h[i, 0, 0:T].sum(0)
        q[i, b + 1] = q + h[i, b + 1, 0:T].sum(0)
        c = RT.placeholder((), dtypes.float32, domain=(i,))
        c[I - 1] = p
        c[True] = p + 0.5 * c[i + 1]
        m = h[i, 0:B, t].max(0)[0]
        w = h[i, ie.max(0, b - 1):b + 1, ie.max(0, t - 1):t + 1].sum((0, 1))
        loss = c[0:I].sum(0)
        loss.backward()
        h[0:I, 0:B, 0:T].sink_udf(grab(st, "h"))
        p[0:I].sink_udf(grab(st, "p"))
        q[0:I, 0:B].sink_udf(grab(st, "q"))
        c[0:I].sink_udf(grab(st, "c"))
        m[0:I, 0:T].sink_udf(grab(st, "m"))
        w[0:I, 0:B, 0:T].sink_udf(grab(st, "w"))
        s.grad.sink_udf(grab(st, "gs"))
    ctx.compile({I: I_, B: B_, T: T_}).execute()
    st_ = torch.tensor(S, requires_grad=True)
    Xt = torch.tensor(X) * st_
    H = [[[None] * T_ for _ in range(B_)] for _ in range(I_)]
    P = [torch.tensor(1.0)]
    for ii in range(I_):
        if ii > 0:
            P.append(P[-1] + sum(H[ii - 1][bb][T_ - 1] for bb in range(B_)) / B_)
        for bb in range(B_):
            H[ii][bb][0] = P[ii]
            for tt in range(1, T_):
                H[ii][bb][tt] = 0.5 * H[ii][bb][tt - 1] + Xt[ii, bb, tt]
    Hn = torch.stack([torch.stack([torch.stack(r) for r in blk]) for blk in H])
    C = [None] * I_
    for ii in reversed(range(I_)):
        C[ii] = P[ii] + (0.5 * C[ii + 1] if ii < I_ - 1 else 0.0)
    torch.stack(C).sum().backward()
    Hd = Hn.detach().numpy()
    Q = np.cumsum(Hd.sum(2), axis=1)
    M = Hd.max(1)
    W = np.zeros_like(Hd)
    for ii in range(I_):
        for bb in range(B_):
            for tt in range(T_):
                W[ii, bb, tt] = Hd[ii, max(0, bb - 1):bb + 1, max(0, tt - 1):tt + 1].sum()
    tol = 1e-4
    return [("h", st["h"], Hd, tol), ("p", st["p"], torch.stack(P).detach().numpy(), tol),
            ("q", st["q"], Q, tol * 10), ("c", st["c"], torch.stack(C).detach().numpy(), tol),
            ("m", st["m"], M, tol), ("w", st["w"], W, tol * 10),
            ("gs", st["gs"], st_.grad.numpy(), 1e-3)]
