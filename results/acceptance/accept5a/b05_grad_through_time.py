"""Autodiff through time over (b, t) vs torch autograd: a leaf w (matrix) used in a forward
recurrence h[b,t+1] = tanh(h @ w + x) and a leaf u in a backwards recurrence
g[b,t] = u*h + 0.9 g[b,t+1]; a causal attention over the growing slice h[b, 0:t+1] feeding the
loss; a clamped window mean of h; a per-b placeholder parameter p (requires_grad) defined at
all points by a const; float64 leaf; loss = sum over the domain via a (B, T) slice; then
a second backward of another loss accumulates into w.grad; checks w.grad, u.grad, p.grad
(with p's unindexed domain (b,)) and d.grad (float64)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_, T_, H_ = 2, 5, 3

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(3)
    W = (rng.normal(size=(H_, H_)) * 0.5).astype(np.float32)
    U = rng.normal(size=(H_,)).astype(np.float32)
    X = rng.normal(size=(B_, T_, H_)).astype(np.float32)
    P = rng.normal(size=(B_, H_)).astype(np.float32)
    D = rng.normal(size=(H_,)).astype(np.float64)
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        w = RT.const(W, requires_grad=True)
        u = RT.const(U, requires_grad=True)
        d = RT.const(D, requires_grad=True)
        p = RT.placeholder((H_,), dtypes.float32, domain=(b,), requires_grad=True)
        p[True] = RT.const(P).index(0, b)
        x = RT.const(X).index(0, b).index(0, t)
        h = RT.placeholder((H_,), dtypes.float32, domain=(b, t))
        h[b, 0] = (x * p).tanh()
        h[b, t + 1] = (h @ w + x[b, t + 1]).tanh()
        g = RT.placeholder((H_,), dtypes.float32, domain=(b, t))
        g[b, T - 1] = u * h
        g[True] = u * h + 0.9 * g[b, t + 1]
        kk = h[b, 0:t + 1]
        att = (kk @ h).softmax(0) @ kk                # (H,)
        wm = h[b, ie.max(0, t - 2):t + 1].mean(0)
        per = (g * att).sum() + (wm * wm).sum() + (h.cast(dtypes.float64) * d).sum().cast(dtypes.float32)
        loss = per[0:B, 0:T].sum((0, 1))
        loss.backward()
        loss2 = (x[0:B, T - 1] @ w).sum() + (w * w).sum()
        loss2.backward()
        loss.sink_udf(grab(s, "loss"))
        w.grad.sink_udf(grab(s, "gw"))
        u.grad.sink_udf(grab(s, "gu"))
        d.grad.sink_udf(grab(s, "gd"))
        p.grad[0:B].sink_udf(grab(s, "gp"))
        s["gp_domain"] = str(p.grad.unindexed_domain.variables)
    ctx.compile({B: B_, T: T_}).execute()
    wt = torch.tensor(W, requires_grad=True); ut = torch.tensor(U, requires_grad=True)
    dt = torch.tensor(D, requires_grad=True); pt = torch.tensor(P, requires_grad=True)
    xt = torch.tensor(X)
    loss = 0.0
    hs_all = []
    for bb in range(B_):
        hs = [torch.tanh(xt[bb, 0] * pt[bb])]
        for tt in range(1, T_):
            hs.append(torch.tanh(hs[-1] @ wt + xt[bb, tt]))
        gs = [None] * T_
        for tt in reversed(range(T_)):
            gs[tt] = ut * hs[tt] + (0.9 * gs[tt + 1] if tt < T_ - 1 else 0.0)
        for tt in range(T_):
            kk = torch.stack(hs[:tt + 1])
            att = torch.softmax(kk @ hs[tt], 0) @ kk
            wm = torch.stack(hs[max(0, tt - 2):tt + 1]).mean(0)
            loss = loss + (gs[tt] * att).sum() + (wm * wm).sum() + (hs[tt].double() * dt).sum().float()
        hs_all.append(hs)
    loss.backward()
    loss2 = sum((xt[bb, T_ - 1] @ wt).sum() for bb in range(B_)) + (wt * wt).sum()
    loss2.backward()
    return [("loss", s["loss"], loss.detach().numpy(), 1e-4 * abs(float(loss))),
            ("gw", s["gw"], wt.grad.numpy(), 1e-4 * max(1, float(wt.grad.abs().max()))),
            ("gu", s["gu"], ut.grad.numpy(), 1e-4 * max(1, float(ut.grad.abs().max()))),
            ("gd", s["gd"], dt.grad.numpy(), 1e-4 * max(1, float(dt.grad.abs().max()))),
            ("gd_dtype", np.array(str(s["gd"].dtype)), np.array("float64"), 0),
            ("gp", s["gp"], pt.grad.numpy(), 1e-4 * max(1, float(pt.grad.abs().max()))),
            ("gp_domain", np.array(s["gp_domain"]), np.array("(b,)"), 0)]
