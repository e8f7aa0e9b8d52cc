"""Windows with both ends symbolic under gradients, over (b, t), vs torch autograd:
y = tanh(x * w) (leaf w (H,), leaf x (B, T, H)); a causal window y[b, max(0,t-W+1):t+1]
(mean + max values + softmax-weighted sum over the slice dim), a future window
y[b, t:min(t+W, T)] sum, a window whose width depends on b (y[b, max(0, t-b-1):t+1]),
a centred window y[b, max(0,t-1):min(t+2,T)] through matmul with a leaf v, then a recurrence
s[b,t+1] = 0.9 s + feature over the windowed features, a loss over s[0:B, T-1] plus the
per-point features, backward; w.grad, x.grad, v.grad and the features vs torch."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_, T_, H_, W_ = 2, 6, 3, 3


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(21)
    Wt = rng.normal(size=(H_,)).astype(np.float32)
    X = rng.normal(size=(B_, T_, H_)).astype(np.float32)
    V = rng.normal(size=(H_, H_)).astype(np.float32) * 0.5
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        w = RT.const(Wt, requires_grad=True)
        xl = RT.const(X, requires_grad=True)
        v = RT.const(V, requires_grad=True)
        y = (xl.index(0, b).index(0, t) * w).tanh()
        win = y[b, ie.max(0, t - W_ + 1):t + 1]
        f1 = win.mean(0) + win.max(0)[0]
        f2 = (win.sum(1).softmax(0).unsqueeze(1) * win).sum(0)
        f3 = y[b, t:ie.min(t + W_, T)].sum(0)
        f4 = y[b, ie.max(0, t - b - 1):t + 1].sum(0)
        f5 = (y[b, ie.max(0, t - 1):ie.min(t + 2, T)] @ v).sum(0)
        feat = (f1 * f2).sum() + (f3 * f4).sum() + f5.tanh().sum()
        s = RT.placeholder((), dtypes.float32, domain=(b, t))
        s[b, 0] = feat
        s[b, t + 1] = 0.9 * s + feat[b, t + 1]
        loss = s[0:B, T - 1].sum(0) + feat[0:B, 0:T].sum((0, 1)) * 0.1
        loss.backward()
        feat[0:B, 0:T].sink_udf(grab(st, "feat"))
        s[0:B, 0:T].sink_udf(grab(st, "s"))
        w.grad.sink_udf(grab(st, "gw"))
        xl.grad.sink_udf(grab(st, "gx"))
        v.grad.sink_udf(grab(st, "gv"))
    ctx.compile({B: B_, T: T_}).execute()
    wt, xt, vt = (torch.tensor(a, requires_grad=True) for a in (Wt, X, V))
    feats = []
    for bb in range(B_):
        y = torch.tanh(xt[bb] * wt)
        row = []
        for tt in range(T_):
            win = y[max(0, tt - W_ + 1):tt + 1]
            f1 = win.mean(0) + win.max(0)[0]
            f2 = (torch.softmax(win.sum(1), 0)[:, None] * win).sum(0)
            f3 = y[tt:min(tt + W_, T_)].sum(0)
            f4 = y[max(0, tt - bb - 1):tt + 1].sum(0)
            f5 = (y[max(0, tt - 1):min(tt + 2, T_)] @ vt).sum(0)
            row.append((f1 * f2).sum() + (f3 * f4).sum() + torch.tanh(f5).sum())
        feats.append(torch.stack(row))
    F = torch.stack(feats)
    S = [F[:, 0]]
    for tt in range(1, T_):
        S.append(0.9 * S[-1] + F[:, tt])
    S = torch.stack(S, 1)
    loss = S[:, T_ - 1].sum() + F.sum() * 0.1
    loss.backward()
    sc = lambda a: 2e-4 * max(1.0, float(np.abs(a).max()))
    return [("feat", st["feat"], F.detach().numpy(), sc(F.detach().numpy())),
            ("s", st["s"], S.detach().numpy(), sc(S.detach().numpy())),
            ("gw", st["gw"], wt.grad.numpy(), sc(wt.grad.numpy())),
            ("gx", st["gx"], xt.grad.numpy(), sc(xt.grad.numpy())),
            ("gv", st["gv"], vt.grad.numpy(), sc(vt.grad.numpy()))]
