"""§3.7 gradients of less common primitives through time, vs torch autograd: sort, max(dim),
cumsum, gather, scatter_add, index_add, pad, flip, cat/split, where, pow, sqrt, sigmoid,
a shrinking slice t:T (reverse cumsum), a window with ie.max, and a recurrence that reads
t-2 (two boundary cases)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

T_ = 4

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(1)
    W0 = rng.normal(size=(3, 4)).astype(np.float32)
    X = rng.normal(size=(T_, 3, 4)).astype(np.float32)
    IDX = np.array([[0, 3, 1, 1], [2, 2, 0, 3], [1, 0, 3, 2]], np.int64)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    s = {}
    with ctx:
        dint = dtypes.default_int
        w = RT.const(W0, requires_grad=True)
        x = RT.const(X).index(0, t)
        a = w * x + x.sin()
        idx = RT.const(IDX).cast(dint)
        terms = [
            a.sort(1)[0][t, :, 0:2].sum(),
            a.max(1)[0].sum(),
            a.cumsum(1).square().sum() * 0.1,
            a.gather(1, idx).exp().sum() * 0.1,
            (a * 0.0).scatter_add(1, idx, a.tanh()).square().sum(),
            a.index_add(0, RT.const(np.array([2, 0, 2])).cast(dint), a * 2.0).sigmoid().sum(),
            a.pad(((1, 0), (2, 2)), value=1.0).flip(1).l_norm(2),
            RT.cat(a, a.abs().sqrt() + 0.0, dim=0).split(0, 2)[1].sum(),
            (a > 0.0).where(a ** 3.0, a * -2.0).sum(),
        ]
        per_t = terms[0]
        for k in terms[1:]:
            per_t = per_t + k
        # time coupling: shrinking slice and window with boundary, recurrence on t-2
        sh = per_t[t:T].sum(0)
        wn = per_t[ie.max(0, t - 1):t + 1].sum(0)
        h = RT.placeholder((), dtypes.float32, domain=(t,))
        h[0] = per_t[0] * 0.5
        h[1] = per_t[1] * 0.25
        h[True] = (h[t - 2] * 0.3 + per_t).tanh()
        loss = (sh * 0.1 + wn * 0.2 + h)[0:T].sum()
        loss.backward()
        w.grad.sink_udf(grab(s, "gw"))
        loss.sink_udf(grab(s, "loss"))
    ctx.compile({T: T_}).execute()
    wt = torch.tensor(W0, requires_grad=True)
    ti = torch.tensor(IDX)
    pts = []
    for k in range(T_):
        xk = torch.tensor(X[k]); a = wt * xk + xk.sin()
        ts = [torch.sort(a, 1)[0][:, 0:2].sum(), a.max(1)[0].sum(), a.cumsum(1).square().sum() * 0.1,
              a.gather(1, ti).exp().sum() * 0.1, (a * 0).scatter_add(1, ti, a.tanh()).square().sum(),
              a.index_add(0, torch.tensor([2, 0, 2]), a * 2).sigmoid().sum(),
              torch.nn.functional.pad(a, (2, 2, 1, 0), value=1.0).flip(1).norm(),
              torch.cat([a, a.abs().sqrt()], 0).split(3, 0)[1].sum(),
              torch.where(a > 0, a ** 3, a * -2).sum()]
        pts.append(sum(ts))
    hs = []
    for k in range(T_):
        if k == 0: hs.append(pts[0] * 0.5)
        elif k == 1: hs.append(pts[1] * 0.25)
        else: hs.append((hs[k - 2] * 0.3 + pts[k]).tanh())
    L = sum(sum(pts[k:]) * 0.1 + sum(pts[max(0, k - 1):k + 1]) * 0.2 + hs[k] for k in range(T_))
    L.backward()
    return [("loss", s["loss"], L.detach().numpy(), 1e-3), ("gw", s["gw"], wt.grad.numpy(), 1e-3 * float(wt.grad.abs().max()))]
