"""Gradients through stencils and reverse recurrences, vs torch autograd: a leaf k (3,)
weights a clamped window over b of the previous step (u[b, t+1] = tanh(sum_j k_j u[b+j-1, t])
with edge replication via ie.max/ie.min), a leaf c in a recurrence running backwards over b
(r[B-1, t] = c*u; r[b, t] = c*u + 0.5 r[b+1, t]), a 2-D window mean, and a loss over (B, T)
plus a per-t term read at b = B-1 and b = 0."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_, T_ = 4, 4

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(8)
    K = rng.normal(size=(3,)).astype(np.float32) * 0.6
    U0 = rng.normal(size=(B_,)).astype(np.float32)
    C = np.float32(0.7)
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        k = RT.const(K, requires_grad=True)
        c = RT.const(C, requires_grad=True)
        u = RT.placeholder((), dtypes.float32, domain=(b, t))
        u[b, 0] = RT.const(U0).index(0, b)
        nb = RT.stack([u[ie.max(b - 1, 0), t], u, u[ie.min(b + 1, B - 1), t]], dim=0)
        u[b, t + 1] = (nb * k).sum().tanh()
        r = RT.placeholder((), dtypes.float32, domain=(b, t))
        r[B - 1, t] = c * u
        r[True] = c * u + 0.5 * r[b + 1, t]
        w2 = u[ie.max(0, b - 1):b + 1, ie.max(0, t - 1):t + 1].mean((0, 1))
        per = r * r + w2 + u[B - 1, t] * u[0, t] * 0.1
        loss = per[0:B, 0:T].sum((0, 1))
        loss.backward()
        loss.sink_udf(grab(s, "loss"))
        k.grad.sink_udf(grab(s, "gk"))
        c.grad.sink_udf(grab(s, "gc"))
    ctx.compile({B: B_, T: T_}).execute()
    kt = torch.tensor(K, requires_grad=True); ct = torch.tensor(C, requires_grad=True)
    u = [[None] * T_ for _ in range(B_)]
    for bb in range(B_):
        u[bb][0] = torch.tensor(U0[bb])
    for tt in range(1, T_):
        for bb in range(B_):
            nb = torch.stack([u[max(bb - 1, 0)][tt - 1], u[bb][tt - 1], u[min(bb + 1, B_ - 1)][tt - 1]])
            u[bb][tt] = torch.tanh((nb * kt).sum())
    r = [[None] * T_ for _ in range(B_)]
    for tt in range(T_):
        for bb in reversed(range(B_)):
            r[bb][tt] = ct * u[bb][tt] + (0.5 * r[bb + 1][tt] if bb < B_ - 1 else 0.0)
    loss = 0.0
    for bb in range(B_):
        for tt in range(T_):
            w = torch.stack([u[x][y] for x in range(max(0, bb - 1), bb + 1) for y in range(max(0, tt - 1), tt + 1)]).mean()
            loss = loss + r[bb][tt] ** 2 + w + u[B_ - 1][tt] * u[0][tt] * 0.1
    loss.backward()
    return [("loss", s["loss"], loss.detach().numpy(), 1e-4 * abs(float(loss))),
            ("gk", s["gk"], kt.grad.numpy(), 1e-4 * max(1, float(kt.grad.abs().max()))),
            ("gc", s["gc"], ct.grad.numpy(), 1e-4 * max(1, float(ct.grad.abs().max())))]
