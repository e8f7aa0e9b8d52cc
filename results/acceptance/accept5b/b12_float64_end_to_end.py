"""A float64 user (scientific / gradient-check use): every layer built with dtype=float64 on
float64 inputs must compute in float64 -- outputs and gradients within 1e-10 of torch float64
(a silent float32 step anywhere shows as ~1e-7): Linear, RMSNorm (API: 'computed in float32'
for low precision; float64 must stay float64), LayerNorm, Embedding, Conv1d, GRUCell,
MultiHeadAttention with RoPE (RoPE computed in float64 per API), Softmax, Normal.log_prob and
entropy, and 4 steps of Adam(max_norm) and SGD(momentum) on float64 parameters vs torch.optim
in float64 (bias correction / clipping in float64)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

F64 = np.float64


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api import nn
    from tempo.api.nn.rnn import GRUCell
    from tempo.api.distributions import Normal
    from tempo.api.optim.optim import Adam, SGD
    from tempo.core.dtype import dtypes
    d64 = dtypes.float64
    rng = np.random.default_rng(9)
    f = lambda *sh: rng.normal(size=sh).astype(F64) * 0.5
    X = f(5, 8); W1, B1 = f(6, 8), f(6); RW = f(6) + 1; LW, LB = f(6) + 1, f(6)
    E = f(7, 6); IDS = np.array([1, 6, 2, 2, 0]); CW, CB = f(3, 6, 3), f(3, 1)
    GI, GH = f(18, 6), f(18, 6)
    Wq, Wk, Wv, Wo = f(8, 8), f(8, 8), f(8, 8), f(8, 8)
    c = lambda a: (lambda shape, dtype, domain: RT.const(a))
    s = {}
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        x = RT.const(X, requires_grad=True)
        lin = nn.Linear(8, 6, dtype=d64, w_init_fun=c(W1), b_init_fun=c(B1))
        rms = nn.RMSNorm(6, eps=1e-6, dtype=d64, w_init_fun=c(RW))
        ln = nn.LayerNorm(6, dtype=d64, w_init_fun=c(LW), b_init_fun=c(LB))
        emb = nn.Embedding(7, 6, dtype=d64, w_init_fun=c(E))
        conv = nn.Conv1d(6, 3, 3, padding=1, dtype=d64, w_init_fun=c(CW), b_init_fun=c(CB))
        order = iter([GI, GH])
        gru = GRUCell(6, 6, bias=False, dtype=d64, w_init_fun=lambda shape, dtype, domain: RT.const(next(order)))
        h = rms(lin(x)) + ln(emb(RT.const(IDS)))            # (5, 6)
        hc = conv(h.transpose(0, 1))                         # (3, 5)
        g = gru(h, h.tanh())                                 # (5, 6)
        sm = nn.Softmax()(g)
        nrm = Normal(hc.transpose(0, 1).sum(1), 0.5 + h.exp().mean(1))
        lp = nrm.log_prob(RT.const(np.linspace(-1, 1, 5)))
        loss = (sm * h).sum() + hc.sum() + lp.sum() + nrm.entropy().sum()
        loss.backward()
        loss.sink_udf(grab(s, "loss")); x.grad.sink_udf(grab(s, "gx")); lin.w.grad.sink_udf(grab(s, "gw"))
        for k, v in dict(h=h, hc=hc, g=g, lp=lp).items():
            v.sink_udf(grab(s, k))
        mha = nn.MultiHeadAttention(8, 2, t, apply_rope=True, dtype=d64, w_init_funs=[c(Wq), c(Wk), c(Wv), c(Wo)])
        mha(RT.const(X).index(0, t))[0:T].sink_udf(grab(s, "mha"))
        # optimizers over i
        la = nn.Linear(8, 6, dtype=d64, domain=(i,), w_init_fun=c(W1), b_init_fun=c(B1))
        lo = ((la(RT.const(X)) - 1.0) ** 2).mean()
        Adam(la.parameters, la.buffers, lr=0.01, max_norm=0.5).step() if False else None
        lo.backward(); Adam(la.parameters, la.buffers, lr=0.01, max_norm=0.5).step()
        lo[0:I].sink_udf(grab(s, "adam"))
        ls = nn.Linear(8, 6, dtype=d64, domain=(i,), w_init_fun=c(W1), b_init_fun=c(B1))
        lo2 = ((ls(RT.const(X)) - 1.0) ** 2).mean()
        lo2.backward(); SGD(ls.parameters, ls.buffers, lr=0.05, momentum=0.9).step()
        lo2[0:I].sink_udf(grab(s, "sgd"))
    ctx.compile({I: 4, T: 5}).execute()
    # torch float64
    Tt = lambda a, g=False: torch.tensor(a, dtype=torch.float64, requires_grad=g)
    tx, tw = Tt(X, True), Tt(W1, True)
    F = torch.nn.functional
    th = F.rms_norm(tx @ tw.T + Tt(B1), (6,), Tt(RW), 1e-6) + F.layer_norm(Tt(E)[torch.tensor(IDS)], (6,), Tt(LW), Tt(LB))
    thc = F.conv1d(th.T[None], Tt(CW), Tt(CB).view(-1), padding=1)[0]
    tg = torch.nn.GRUCell(6, 6, bias=False, dtype=torch.float64)
    with torch.no_grad():
        tg.weight_ih.copy_(Tt(GI)); tg.weight_hh.copy_(Tt(GH))
    tgo = tg(th, th.tanh())
    tn = torch.distributions.Normal(thc.T.sum(1), 0.5 + th.exp().mean(1))
    tlp = tn.log_prob(torch.tensor(np.linspace(-1, 1, 5)))
    tloss = (torch.softmax(tgo, -1) * th).sum() + thc.sum() + tlp.sum() + tn.entropy().sum()
    tloss.backward()
    # mha reference (interleaved RoPE, causal)
    xq = Tt(X)
    q, k, v = (xq @ Tt(Wq).T).view(5, 2, 4), (xq @ Tt(Wk).T).view(5, 2, 4), (xq @ Tt(Wv).T).view(5, 2, 4)
    fr = 1.0 / (10000.0 ** (torch.arange(0, 4, 2, dtype=torch.float64) / 4))
    ang = torch.arange(5, dtype=torch.float64)[:, None] * fr[None]
    def rope(z):
        a, b_ = z[..., 0::2], z[..., 1::2]
        cs, sn = ang.cos()[:, None], ang.sin()[:, None]
        return torch.stack([a * cs - b_ * sn, b_ * cs + a * sn], -1).reshape(z.shape)
    q, k = rope(q), rope(k)
    sc = torch.einsum("qhd,khd->hqk", q, k) / 2.0
    sc = sc.masked_fill(torch.triu(torch.ones(5, 5, dtype=torch.bool), 1), float("-inf"))
    mo = (torch.einsum("hqk,khd->qhd", sc.softmax(-1), v).reshape(5, 8)) @ Tt(Wo).T
    def opt_losses(mk, clip):
        w, b_ = Tt(W1, True), Tt(B1, True); o = mk([w, b_]); out = []
        for _ in range(4):
            l_ = ((Tt(X) @ w.T + b_ - 1.0) ** 2).mean(); out.append(l_.item())
            o.zero_grad(); l_.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_([w, b_], clip)
            o.step()
        return np.array(out)
    tol = 1e-10
    return [("loss", s["loss"], tloss.detach().numpy(), tol), ("gx", s["gx"], tx.grad.numpy(), tol), ("gw", s["gw"], tw.grad.numpy(), tol),
            ("h", s["h"], th.detach().numpy(), tol), ("hc", s["hc"], thc.detach().numpy(), tol), ("gru", s["g"], tgo.detach().numpy(), tol),
            ("lp", s["lp"], tlp.detach().numpy(), tol), ("mha_rope", s["mha"], mo.numpy(), tol),
            ("adam", s["adam"], opt_losses(lambda p: torch.optim.Adam(p, lr=0.01), 0.5), tol),
            ("sgd", s["sgd"], opt_losses(lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), None), tol),
            ("dtype", np.array(str(s["loss"].dtype)), np.array("float64"), 0)]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        if a.dtype.kind in "UOb":
            print(r[0], "ok" if np.array_equal(a, b_) else ("BAD", a, b_)); continue
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "SHAPE"
        print(r[0], a.dtype, err, "ok" if a.shape == b_.shape and err <= r[3] else "BAD")
