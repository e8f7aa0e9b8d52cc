"""§6.4 objectives and a user-written GAE with episode ends (dones) over (b, t), vs numpy:
rl.gae for lambda in {0, 0.7, 1} at the true bound and with T' < T (bootstrap), n_step_returns,
n_step_td_residual; the user GAE uses a future read adv[t+1] masked by (1-done), defined by a
shrinking recursion (adv[T-1] base case), and its gradient into the value head."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_, T_ = 2, 7

def np_gae(r, v, d, g, lam, vlast):
    adv = np.zeros_like(r); last = 0.0
    for k in reversed(range(len(r))):
        nv = vlast if k == len(r) - 1 else v[k + 1]
        nonterm = 1.0 - d[k]
        delta = r[k] + g * nv * nonterm - v[k]
        last = delta + g * lam * nonterm * last
        adv[k] = last
    return adv

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api import rl
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(3)
    R = rng.normal(size=(B_, T_)).astype(np.float32)
    V = rng.normal(size=(B_, T_)).astype(np.float32)
    D = np.zeros((B_, T_), np.float32); D[0, 2] = 1; D[1, 5] = 1; D[0, 6] = 1
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    s = {}
    g, lam = 0.9, 0.8
    with ctx:
        r = RT.const(R).index(0, b).index(0, t)
        wv = RT.const(1.0, requires_grad=True)
        v = RT.const(V).index(0, b).index(0, t) * wv
        d = RT.const(D).index(0, b).index(0, t)
        out = {}
        for lm in (0.0, 0.7, 1.0):
            out[f"gae{lm}"] = rl.gae(r, v, t, gamma=g, lambda_=lm)
        out["gae_boot"] = rl.gae(r, v, t, T=T - 2, gamma=g, lambda_=0.7)
        out["nret"] = rl.n_step_returns(r, t, n=3, gamma=g)
        out["ntd"] = rl.n_step_td_residual(r, v, t, n=2, gamma=g)
        # user GAE with dones (last step bootstraps with 0)
        nonterm = 1.0 - d
        nv = RT.placeholder((), dtypes.float32, domain=(b, t))
        nv[t == T - 1] = RT.const(0.0)
        nv[True] = v[b, t + 1]
        delta = r + g * nv * nonterm - v
        adv = RT.placeholder((), dtypes.float32, domain=(b, t))
        adv[t == T - 1] = delta
        adv[True] = delta + g * lam * nonterm * adv[b, t + 1]
        out["user_gae"] = adv
        for k, x in out.items():
            x[0:B, 0:T - 2 if k == "gae_boot" else T].sink_udf(grab(s, k))
        vloss = ((adv.detach() + v - v.detach()) * v)[0:B, 0:T].sum()  # d/dwv = sum(adv_det*V) + ...
        vloss2 = (adv * 1.0)[0:B, 0:T].sum()
        vloss2.backward()
        wv.grad.sink_udf(grab(s, "gw"))
    ctx.compile({B: B_, T: T_}).execute()
    ref = {}
    zero = np.zeros_like(R[0])
    for lm in (0.0, 0.7, 1.0):
        ref[f"gae{lm}"] = np.stack([np_gae(R[k], V[k], zero, g, lm, 0.0) for k in range(B_)])
    ref["gae_boot"] = np.stack([np_gae(R[k, :T_ - 2], V[k, :T_ - 2], zero[:T_ - 2], g, 0.7, V[k, T_ - 2]) for k in range(B_)])
    ref["nret"] = np.stack([[sum(g ** j * R[k, q + j] for j in range(3) if q + j < T_) for q in range(T_)] for k in range(B_)])
    ref["ntd"] = np.stack([[sum(g ** j * R[k, q + j] for j in range(2) if q + j < T_) + (g ** 2 * V[k, q + 2] if q + 2 < T_ else 0.0) - V[k, q] for q in range(T_)] for k in range(B_)])
    ref["user_gae"] = np.stack([np_gae(R[k], V[k], D[k], g, lam, 0.0) for k in range(B_)])
    wt = torch.tensor(1.0, requires_grad=True)
    tot = 0
    for k in range(B_):
        vv = torch.tensor(V[k]) * wt; last = 0
        for q in reversed(range(T_)):
            nvv = 0.0 if q == T_ - 1 else vv[q + 1]
            delta = R[k, q] + g * nvv * (1 - D[k, q]) - vv[q]
            last = delta + g * lam * (1 - D[k, q]) * last
            tot = tot + last
    tot.backward()
    ref["gw"] = wt.grad.numpy()
    return [(k, s[k], np.asarray(ref[k], np.float32), 1e-4) for k in ref]
