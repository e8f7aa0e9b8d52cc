"""Transformer-XL-style segment recurrence: segments i = 0..I-1 of T tokens; at (i, t) the
query attends over the previous segment's hidden states mem = h[i-1, 0:T] (detached; none
for i = 0) concatenated with the own segment's causal keys k[i, 0:t+1] -- a cat of two
windows of symbolic lengths T and t+1 -- then softmax over the T + t + 1 keys; the hidden
state h = x + attention output feeds the next segment. Loss = sum of h * c over all points,
backward to the projections. Reference: torch eager loops with the same weights (memory
detached as in Transformer-XL). Checks h and the grads of Wq, Wk, Wv."""
import numpy as np
import torch

from common7 import np_of

I_, T_, D = 3, 4, 5


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(9)
    X = g.normal(size=(I_, T_, D)).astype(np.float32)
    W = {n: (g.normal(size=(D, D)) * 0.4).astype(np.float32) for n in ("q", "k", "v")}
    C = g.normal(size=(D,)).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        Wr = {n: RT.const(w, requires_grad=True) for n, w in W.items()}
        x = RT.const(X).index(0, i).index(0, t)
        h = RT.placeholder((D,), dtypes.float32, domain=(i, t))
        kx, vx = x @ Wr["k"], x @ Wr["v"]
        q = x @ Wr["q"]
        hk = (h @ Wr["k"]).detach()
        hv = (h @ Wr["v"]).detach()
        scale = float(1 / np.sqrt(D))
        own_k, own_v = kx[i, 0:t + 1], vx[i, 0:t + 1]
        # segment 0: own keys only; later: previous segment's memory, then own keys
        p0 = ((own_k * q).sum(-1) * scale).softmax(-1)
        out0 = (p0.unsqueeze(-1) * own_v).sum(0)
        keys = RT.cat(hk[i - 1, 0:T], own_k, dim=0)
        vals = RT.cat(hv[i - 1, 0:T], own_v, dim=0)
        p1 = ((keys * q).sum(-1) * scale).softmax(-1)
        out1 = (p1.unsqueeze(-1) * vals).sum(0)
        h[0, t] = x + out0
        h[True] = x + out1
        loss = (h * RT.const(C))[0:I, 0:T].sum()
        loss.backward()
        h[0:I, 0:T].sink_udf(lambda v: st.__setitem__("h", np_of(v)))
        for n, w in Wr.items():
            w.grad.sink_udf(lambda v, n=n: st.__setitem__(f"g{n}", np_of(v)))
    ctx.compile({I: I_, T: T_}).execute()

    Wt = {n: torch.tensor(w, requires_grad=True) for n, w in W.items()}
    Xt = torch.tensor(X)
    hs, prev = [], None
    for it in range(I_):
        x = Xt[it]
        q, k, v = x @ Wt["q"], x @ Wt["k"], x @ Wt["v"]
        rows = []
        for tt in range(T_):
            ks, vs = k[:tt + 1], v[:tt + 1]
            if prev is not None:
                ks = torch.cat([(prev @ Wt["k"]).detach(), ks])
                vs = torch.cat([(prev @ Wt["v"]).detach(), vs])
            p = ((ks * q[tt]).sum(-1) / np.sqrt(D)).softmax(-1)
            rows.append(x[tt] + (p[:, None] * vs).sum(0))
        hcur = torch.stack(rows)
        hs.append(hcur)
        prev = hcur
    H = torch.stack(hs)
    (H * torch.tensor(C)).sum().backward()
    res = [("h", st["h"], H.detach().numpy(), 1e-5)]
    for n in W:
        res.append((f"grad.{n}", st[f"g{n}"], Wt[n].grad.numpy(), 1e-4))
    return res
