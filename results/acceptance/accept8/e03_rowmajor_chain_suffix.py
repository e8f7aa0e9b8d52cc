"""§3.2 `previous` / `next_` / `init` (the lexicographic predecessor / successor with
wrap-around, used by one earlier program only) and §3.4 suffix slices, with gradients, over
(b, t): v = tanh(X w) (leaf w); a running sum over ALL points in row-major order
(x.init = v; x[True] = x.previous + v: crosses from (b, T-1) to (b+1, 0)); a reverse row-major
running sum (y[B-1, T-1] = v; y[True] = y.next_ + v); returns-to-go as a suffix reduction
G[b, t] = sum_k gamma^k v[b, t+k] over v[b, t:T] with gamma ** arange(T - t) (a slice of
symbolic length T - t); a clamped window cumsum v[b, max(0, t-W):t+1].cumsum(0) read at its
last element; RT.from_expr(t * 2 + b) as a float feature. Loss = sum of all over (B, T).
Reference: torch autograd on the flattened sequence; checks x, y, G, window values, w.grad."""
import numpy as np
import torch

from common8 import np_of

B_, T_, H, W = 3, 5, 2, 2
GAMMA = 0.8


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api import max as ie_max
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(8)
    X = g.normal(size=(B_, T_, H)).astype(np.float32)
    w0 = g.normal(size=(H,)).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        w = RT.const(w0, requires_grad=True)
        v = (RT.const(X).index(0, b).index(0, t) * w).tanh().sum()          # () over (b, t)
        x = RT.placeholder((), dtypes.float32, domain=(b, t))
        x.init = v
        x[True] = x.previous + v
        y = RT.placeholder((), dtypes.float32, domain=(b, t))
        y[B - 1, T - 1] = v
        y[True] = y.next_ + v
        disc = GAMMA ** RT.arange(T - t).cast(dtypes.float32)
        G = (disc * v[b, t:T]).sum(0)
        win = v[b, ie_max(0, t - W):t + 1].cumsum(0)
        wl = win.index(0, -1)
        feat = RT.from_expr(t * 2 + b).cast(dtypes.float32) * v
        total = x + 0.5 * y + G + wl + 0.1 * feat
        loss = total[0:B, 0:T].sum()
        loss.backward()
        for name, z in (("x", x), ("y", y), ("G", G), ("wl", wl)):
            z[0:B, 0:T].sink_udf(lambda a, name=name: st.__setitem__(name, np_of(a)))
        w.grad.sink_udf(lambda a: st.__setitem__("gw", np_of(a)))
    ctx.compile({B: B_, T: T_}).execute()

    wt = torch.tensor(w0, requires_grad=True)
    vt = torch.tanh(torch.tensor(X) * wt).sum(-1)                           # (B, T)
    flat = vt.reshape(-1)
    xt = torch.cumsum(flat, 0).reshape(B_, T_)
    yt = torch.flip(torch.cumsum(torch.flip(flat, [0]), 0), [0]).reshape(B_, T_)
    Gt = torch.stack([torch.stack([sum(GAMMA ** k * vt[bi, ti + k] for k in range(T_ - ti))
                                   for ti in range(T_)]) for bi in range(B_)])
    wlt = torch.stack([torch.stack([vt[bi, max(0, ti - W):ti + 1].sum() for ti in range(T_)])
                       for bi in range(B_)])
    feat = (torch.arange(T_)[None, :] * 2 + torch.arange(B_)[:, None]).float() * vt
    loss = (xt + 0.5 * yt + Gt + wlt + 0.1 * feat).sum()
    loss.backward()
    d = lambda a: a.detach().numpy()  # noqa: E731
    return [("x", st["x"], d(xt), 1e-5), ("y", st["y"], d(yt), 1e-5), ("G", st["G"], d(Gt), 1e-5),
            ("window", st["wl"], d(wlt), 1e-5), ("w.grad", st["gw"], d(wt.grad), 1e-4)]
