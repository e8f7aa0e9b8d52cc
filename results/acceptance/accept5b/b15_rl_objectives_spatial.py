"""§6.4 objectives on the shapes a vectorised rollout gives: rewards/values over (b, t) with a
spatial (num_envs=3,) dim, t NOT the last domain dim (domain (t, b)), gamma 0.9, n=3,
lambda 0.8, each with the true bound T=7 and a truncated window T'=5 (bootstrapping from
v[T']) -- n_step_returns, bootstrapped_n_step_returns, n_step_td_residual and gae vs numpy
implementations of API.md's definitions; n_step_returns' gradient w.r.t. the rewards
(it alone is not detached)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

T_, B_, E_ = 7, 2, 3
G, N, LAM = 0.9, 3, 0.8


def ref_nstep(r, T, n, g):
    out = np.zeros_like(r)
    for t in range(T):
        for k in range(n):
            if t + k < T:
                out[t] += g ** k * r[t + k]
    return out


def ref_boot(r, v, T, n, g, Ttrue):
    out = ref_nstep(r, T, n, g)
    for t in range(T):
        L = min(n, T - t)
        if t + L < Ttrue:
            out[t] += g ** L * v[t + L]
    return out


def ref_gae(r, v, T, g, lam, Ttrue):
    delta = np.zeros_like(r)
    for t in range(T):
        vn = v[t + 1] if t + 1 < Ttrue else 0.0
        delta[t] = r[t] + g * vn - v[t]
    adv = np.zeros_like(r); acc = 0.0
    for t in reversed(range(T)):
        acc = delta[t] + g * lam * acc
        adv[t] = acc
    return adv


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api import rl
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(4)
    R = rng.normal(size=(T_, B_, E_)).astype(np.float32)
    V = rng.normal(size=(T_, B_, E_)).astype(np.float32)
    s = {}
    ctx = TempoContext(cfg, dim_names=("t", "b"))
    (t, T), (b, B) = ctx.variables_and_bounds
    with ctx:
        r = RT.const(R, requires_grad=True)
        rr = r.index(0, t).index(0, b)
        vv = RT.const(V).index(0, t).index(0, b)
        for tag, Tw in [("full", None), ("trunc", 5)]:
            ns = rl.n_step_returns(rr, t, Tw, n=N, gamma=G)
            ns[0:T, 0:B].sink_udf(grab(s, tag + "_ns"))
            rl.bootstrapped_n_step_returns(rr, vv, t, Tw, n=N, gamma=G)[0:T, 0:B].sink_udf(grab(s, tag + "_boot"))
            rl.n_step_td_residual(rr, vv, t, Tw, n=N, gamma=G)[0:T, 0:B].sink_udf(grab(s, tag + "_td"))
            rl.gae(rr, vv, t, Tw, gamma=G, lambda_=LAM)[0:T, 0:B].sink_udf(grab(s, tag + "_gae"))
            if tag == "full":
                (ns * RT.const(np.arange(1, E_ + 1, dtype=np.float32))).sum()[0:T, 0:B].sum(0).sum(0).backward()
        r.grad.sink_udf(grab(s, "gr"))
    ctx.compile({T: T_, B: B_}).execute()
    out = []
    for tag, Tw in [("full", T_), ("trunc", 5)]:
        ns = ref_nstep(R, Tw, N, G); bo = ref_boot(R, V, Tw, N, G, T_)
        td = bo - V
        ga = ref_gae(R, V, Tw, G, LAM, T_)
        if Tw < T_:   # past a truncated window the objectives are 0 (not checked by the doc: compare t < T' only)
            sl = slice(0, Tw)
        else:
            sl = slice(0, T_)
        out += [(tag + "_ns", s[tag + "_ns"][sl], ns[sl], 1e-5), (tag + "_boot", s[tag + "_boot"][sl], bo[sl], 1e-5),
                (tag + "_td", s[tag + "_td"][sl], td[sl], 1e-5), (tag + "_gae", s[tag + "_gae"][sl], ga[sl], 1e-5)]
    # d/dr of sum_t,b,e w_e * G[t] = sum over t' <= t < t'+n of g^(t'-t) ... numpy via finite structure
    gr = np.zeros_like(R)
    for t_ in range(T_):
        for k in range(N):
            if t_ + k < T_:
                gr[t_ + k] += G ** k * np.arange(1, E_ + 1)
    out.append(("grad_r", s["gr"], gr.astype(np.float32), 1e-5))
    return out


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "SHAPE"
        print(r[0], a.shape, err, "ok" if a.shape == b_.shape and err <= r[3] else "BAD")
