"""§6.1/§6.2: a 3-layer tanh MLP whose layers are ONE Linear over a perm var l
(new_perm_var(3), module[i, l] read per layer), trained over i by SGD(momentum=0.9,
weight_decay=0.01) with independent_domain=(l,) (a momentum buffer per layer) and by
LAMB(wd=0.01) with independent_domain=(l,) (LAMB's trust ratio is per layer, the point of
LAMB): losses over 5 iterations vs torch.optim.SGD on 3 separate Linears and vs a numpy LAMB
whose trust ratio is computed per layer and per parameter tensor."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

N = 5


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD, LAMB
    rng = np.random.default_rng(6)
    W = (rng.normal(size=(3, 4, 4)) * 0.5).astype(np.float32)
    Bb = (rng.normal(size=(3, 4)) * 0.1).astype(np.float32)
    X = rng.normal(size=(N, 6, 4)).astype(np.float32)
    Y = rng.normal(size=(N, 6, 4)).astype(np.float32)
    s = {}
    for name in ["sgd", "lamb"]:
        ctx = TempoContext(cfg, dim_names=("i",))
        ((i, I),) = ctx.variables_and_bounds
        with ctx:
            l, L = ctx.new_perm_var(3)
            lin = Linear(4, 4, domain=(i,), independent_domain=(l,),
                         w_init_fun=lambda shape, dtype, domain: RT.const(W).index(0, l),
                         b_init_fun=lambda shape, dtype, domain: RT.const(Bb).index(0, l))
            h = RT.const(X).index(0, i)
            for k in range(3):
                h = lin[i, k](h).tanh()
            loss = ((h - RT.const(Y).index(0, i)) ** 2).mean()
            loss.backward()
            (SGD(lin.parameters, lin.buffers, lr=0.2, momentum=0.9, weight_decay=0.01, independent_domain=(l,)) if name == "sgd"
             else LAMB(lin.parameters, lin.buffers, lr=0.05, wd=0.01, independent_domain=(l,))).step()
            loss[0:I].sink_udf(grab(s, name))
        ctx.compile({I: N}).execute()
    # torch SGD
    ws = [torch.tensor(W[k], requires_grad=True) for k in range(3)]
    bs = [torch.tensor(Bb[k], requires_grad=True) for k in range(3)]
    opt = torch.optim.SGD(ws + bs, lr=0.2, momentum=0.9, weight_decay=0.01)
    sgd_ref = []
    for n in range(N):
        h = torch.tensor(X[n])
        for k in range(3):
            h = torch.tanh(h @ ws[k].T + bs[k])
        lo = ((h - torch.tensor(Y[n])) ** 2).mean(); sgd_ref.append(lo.item())
        opt.zero_grad(); lo.backward(); opt.step()
    # numpy LAMB per layer, per tensor
    ws = [torch.tensor(W[k], dtype=torch.float64, requires_grad=True) for k in range(3)]
    bs = [torch.tensor(Bb[k], dtype=torch.float64, requires_grad=True) for k in range(3)]
    ps = ws + bs
    m = [torch.zeros_like(p) for p in ps]; v = [torch.zeros_like(p) for p in ps]
    lamb_ref = []
    for n in range(N):
        h = torch.tensor(X[n], dtype=torch.float64)
        for k in range(3):
            h = torch.tanh(h @ ws[k].T + bs[k])
        lo = ((h - torch.tensor(Y[n], dtype=torch.float64)) ** 2).mean(); lamb_ref.append(lo.item())
        gs = torch.autograd.grad(lo, ps)
        with torch.no_grad():
            for j, (p, g) in enumerate(zip(ps, gs)):
                m[j] = 0.9 * m[j] + 0.1 * g; v[j] = 0.999 * v[j] + 0.001 * g * g
                r = (m[j] / (1 - 0.9 ** (n + 1))) / ((v[j] / (1 - 0.999 ** (n + 1))).sqrt() + 1e-6) + 0.01 * p
                wn, rn = p.norm(), r.norm()
                trust = wn / rn if wn > 0 and rn > 0 else 1.0
                p -= 0.05 * trust * r
    return [("sgd_per_layer", s["sgd"], np.array(sgd_ref, np.float32), 1e-4),
            ("lamb_per_layer", s["lamb"], np.array(lamb_ref, np.float32), 1e-4)]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64)))
        print(r[0], err, "ok" if err <= r[3] else ("BAD", a, b_))
