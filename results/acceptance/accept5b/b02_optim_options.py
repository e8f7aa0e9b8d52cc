"""§6.2 optimizers with options accept4 did not use, each vs torch.optim over 6 steps, with
per-iteration data (the batch changes with i): SGD(momentum=0.9, no nesterov, weight_decay,
max_norm with norm_type=1.0); Adam(b1=0.8, b2=0.99, eps=1e-6, max_norm with norm_type=inf)
over a TWO-variable update domain (e, i) (epochs x iterations: the lexicographic predecessor
crosses the epoch boundary, bias correction counts 1..6 continuously); public clip_norm with
norm_type=3 vs clip_grad_norm_; LAMB(wd=0.01) vs a numpy LAMB (trust = ||w||/||r||)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

N = 6


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear
    from tempo.api.nn.utils import clip_norm
    from tempo.api.optim.optim import SGD, Adam, LAMB
    rng = np.random.default_rng(11)
    X = rng.normal(size=(N, 5, 4)).astype(np.float32)
    Y = rng.normal(size=(N, 5, 3)).astype(np.float32)
    W = rng.normal(size=(3, 4)).astype(np.float32)
    Bb = rng.normal(size=(3,)).astype(np.float32)
    G1 = rng.normal(size=(3, 4)).astype(np.float32)
    G2 = rng.normal(size=(5,)).astype(np.float32)
    c = lambda a: (lambda shape, dtype, domain: RT.const(a))
    s = {}
    # ---- SGD over (i,)
    ctx = TempoContext(cfg, dim_names=("i",))
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        lin = Linear(4, 3, domain=(i,), w_init_fun=c(W), b_init_fun=c(Bb))
        x, y = RT.const(X).index(0, i), RT.const(Y).index(0, i)
        loss = ((lin(x) - y) ** 2).mean()
        opt = SGD(lin.parameters, lin.buffers, lr=0.1, momentum=0.9, weight_decay=0.01, max_norm=0.3, norm_type=1.0)
        loss.backward(); opt.step()
        loss[0:I].sink_udf(grab(s, "sgd"))
        lin.w[0:I].sink_udf(grab(s, "sgd_w"))
        cl, nrm = clip_norm([RT.const(G1), RT.const(G2)], 2.0, norm_type=3.0)
        cl[0].sink_udf(grab(s, "clip0")); cl[1].sink_udf(grab(s, "clip1")); nrm.sink_udf(grab(s, "clipn"))
    ctx.compile({I: N}).execute()
    # ---- Adam over (e, i) and LAMB over (i,)
    E_, I_ = 2, 3
    ctx2 = TempoContext(cfg, dim_names=("e", "i"))
    (e, E), (i2, I2) = ctx2.variables_and_bounds
    with ctx2:
        lin2 = Linear(4, 3, domain=(e, i2), w_init_fun=c(W), b_init_fun=c(Bb))
        k = e * I_ + i2
        x2, y2 = RT.const(X).index(0, k), RT.const(Y).index(0, k)
        loss2 = ((lin2(x2) - y2) ** 2).mean()
        adam = Adam(lin2.parameters, lin2.buffers, lr=0.05, b1=0.8, b2=0.99, eps=1e-6, max_norm=0.5, norm_type=float("inf"))
        loss2.backward(); adam.step()
        loss2[0:E, 0:I2].sink_udf(grab(s, "adam"))
    ctx2.compile({E: E_, I2: I_}).execute()
    ctx3 = TempoContext(cfg, dim_names=("i",))
    ((i3, I3),) = ctx3.variables_and_bounds
    with ctx3:
        lin3 = Linear(4, 3, domain=(i3,), w_init_fun=c(W), b_init_fun=c(Bb))
        x3, y3 = RT.const(X).index(0, i3), RT.const(Y).index(0, i3)
        loss3 = ((lin3(x3) - y3) ** 2).mean()
        lamb = LAMB(lin3.parameters, lin3.buffers, lr=0.02, wd=0.01)
        loss3.backward(); lamb.step()
        loss3[0:I3].sink_udf(grab(s, "lamb"))
    ctx3.compile({I3: N}).execute()

    # ---- references
    def torch_run(opt_fn, clip=None):
        w = torch.tensor(W, requires_grad=True); bb = torch.tensor(Bb, requires_grad=True)
        opt = opt_fn([w, bb]); ls, ws = [], []
        for n in range(N):
            lo = ((torch.tensor(X[n]) @ w.T + bb - torch.tensor(Y[n])) ** 2).mean()
            ls.append(lo.item()); ws.append(w.detach().clone().numpy())
            opt.zero_grad(); lo.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_([w, bb], clip[0], norm_type=clip[1])
            opt.step()
        return np.array(ls, np.float32), np.array(ws)
    sgd_l, sgd_w = torch_run(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01), (0.3, 1.0))
    adam_l, _ = torch_run(lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.8, 0.99), eps=1e-6), (0.5, float("inf")))
    g1, g2 = torch.tensor(G1), torch.tensor(G2)
    tn = torch.nn.utils.clip_grad_norm_([torch.nn.Parameter(g1.clone()), torch.nn.Parameter(g2.clone())], 2.0, norm_type=3.0)
    # clip_grad_norm_ works on .grad; do it by hand with torch's rule
    tn = torch.linalg.vector_norm(torch.cat([g1.flatten(), g2]), 3.0)
    coef = min(1.0, 2.0 / (tn.item() + 1e-6))
    # numpy LAMB
    w, bb = W.astype(np.float64), Bb.astype(np.float64)
    m = [np.zeros_like(w), np.zeros_like(bb)]; v = [np.zeros_like(w), np.zeros_like(bb)]
    lamb_l = []
    for n in range(N):
        pred = X[n] @ w.T + bb; d = pred - Y[n]
        lamb_l.append(np.mean(d ** 2))
        gw = 2 * d.T @ X[n] / d.size; gb = 2 * d.sum(0) / d.size
        ps = [w, bb]
        for j, g in enumerate([gw, gb]):
            m[j] = 0.9 * m[j] + 0.1 * g; v[j] = 0.999 * v[j] + 0.001 * g * g
            r = (m[j] / (1 - 0.9 ** (n + 1))) / (np.sqrt(v[j] / (1 - 0.999 ** (n + 1))) + 1e-6) + 0.01 * ps[j]
            wn, rn = np.linalg.norm(ps[j]), np.linalg.norm(r)
            trust = wn / rn if (wn > 0 and rn > 0) else 1.0
            ps[j] = ps[j] - 0.02 * trust * r
        w, bb = ps
    return [("sgd_loss", s["sgd"], sgd_l, 1e-4), ("sgd_w", s["sgd_w"], sgd_w, 1e-4),
            ("adam_ei_loss", s["adam"].reshape(-1), adam_l, 1e-4),
            ("clip0", s["clip0"], G1 * coef, 1e-5), ("clip1", s["clip1"], G2 * coef, 1e-5),
            ("clip_norm", s["clipn"], np.float32(tn.item()), 1e-4),
            ("lamb_loss", s["lamb"], np.array(lamb_l, np.float32), 1e-4)]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        print(r[0], np.max(np.abs(np.asarray(r[1], np.float64) - np.asarray(r[2], np.float64))))
