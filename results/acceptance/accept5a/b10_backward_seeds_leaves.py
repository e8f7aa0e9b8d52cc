"""Autodiff forms beyond a scalar loss, vs torch autograd: backward() of a per-point scalar
over (t) (each point its own loss: the leaf's grad sums them), backward(grad=seed) of a (3,)
tensor over (t) with a const seed, a source_with_ts_udf leaf with requires_grad=True (its
grad has the leaf's (t,) domain), reads at fixed points x[0], x[T-1], x[-1], the mean over a
symbolic slice x[0:T], cumprod and discounted_cum_sum in the chain, a where with a
data-dependent mask, and grads of a leaf used inside a per-(b,t) placeholder branch."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

T_, B_ = 4, 2

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    be = cfg.backend
    def bt(a):
        if be == "torch":
            return torch.tensor(a)
        if be == "jax":
            import jax.numpy as jnp
            return jnp.asarray(a)
        return np.asarray(a)
    rng = np.random.default_rng(9)
    W = rng.normal(size=(3, 3)).astype(np.float32)
    X = rng.normal(size=(T_, 3)).astype(np.float32)
    SEED = np.array([1.0, -2.0, 0.5], np.float32)
    res = []
    # 1. per-point scalar losses + seeded backward + source leaf
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    s = {}
    with ctx:
        w = RT.const(W, requires_grad=True)
        v = RT.const(W[0] * 0.5, requires_grad=True)
        x = RT.source_with_ts_udf(lambda ts: bt(X[ts[t]]), (3,), dtypes.float32, domain=(t,),
                                  requires_grad=True)
        h = (x @ w).tanh()                       # (3,) over t
        per = (h * h).sum() + (x[0] * h).sum() + (x[T - 1] * x[-1]).sum() * 0.1
        per.backward()                           # one loss per t
        y = h * v + x[0:T].mean(0)
        y.backward(RT.const(SEED))               # seeded, (3,) over t
        z = (x * v).cumprod(0).sum() + x[0:T].sum(1).discounted_cum_sum(0.5).sum() * 0.0
        m = ((x > 0.0).where(x * 3.0, x * -0.5) * v).sum()
        (z + m).backward()
        w.grad.sink_udf(grab(s, "gw"))
        v.grad.sink_udf(grab(s, "gv"))
        x.grad[0:T].sink_udf(grab(s, "gx"))
        s["gx_dom"] = str(x.grad.unindexed_domain.variables)
    ctx.compile({T: T_}).execute()
    wt = torch.tensor(W, requires_grad=True); vt = torch.tensor(W[0] * 0.5, requires_grad=True)
    xt = torch.tensor(X, requires_grad=True)
    total = 0.0
    for k in range(T_):
        h = torch.tanh(xt[k] @ wt)
        total = total + (h * h).sum() + (xt[0] * h).sum() + (xt[T_ - 1] * xt[-1]).sum() * 0.1
        y = h * vt + xt.mean(0)
        total = total + (y * torch.tensor(SEED)).sum()
        z = (xt[k] * vt).cumprod(0).sum()
        m = (torch.where(xt[k] > 0, xt[k] * 3.0, xt[k] * -0.5) * vt).sum()
        total = total + z + m
    total.backward()
    res += [("gw", s["gw"], wt.grad.numpy(), 1e-4 * max(1, float(wt.grad.abs().max()))),
            ("gv", s["gv"], vt.grad.numpy(), 1e-4 * max(1, float(vt.grad.abs().max()))),
            ("gx", s["gx"], xt.grad.numpy(), 1e-4 * max(1, float(xt.grad.abs().max()))),
            ("gx_domain", np.array(s["gx_dom"]), np.array("(t,)"), 0)]
    # 2. a leaf inside a per-(b, t) placeholder branch
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    s = {}
    XB = rng.normal(size=(B_, T_, 3)).astype(np.float32)
    with ctx:
        w = RT.const(W, requires_grad=True)
        x = RT.const(XB).index(0, b).index(0, t)
        p = RT.placeholder((3,), dtypes.float32, domain=(b, t))
        p[t < 2] = (x @ w).sigmoid()
        p[True] = x * w[0]
        loss = p[0:B, 0:T].sum()
        loss.backward()
        w.grad.sink_udf(grab(s, "gw2"))
    ctx.compile({B: B_, T: T_}).execute()
    wt = torch.tensor(W, requires_grad=True)
    xb = torch.tensor(XB)
    tot = sum(((torch.sigmoid(xb[bb, k] @ wt) if k < 2 else xb[bb, k] * wt[0]).sum()
               for bb in range(B_) for k in range(T_)))
    tot.backward()
    res.append(("gw_branch", s["gw2"], wt.grad.numpy(), 1e-4 * max(1, float(wt.grad.abs().max()))))
    return res
