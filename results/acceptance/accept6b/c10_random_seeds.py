"""Random ops across backends with seeds (distributional checks, not bit equality):
deterministic=True + seed gives the same draws in two compiles of one program and other
draws with another seed; uniform(low, high) over (b, t) fresh per point (mean, var, range,
lag-1 correlation ~ 0 across t), random() without domain shared by every point, normal
(mean, std) moments and a KS-like max CDF gap, random_int range and counts, random_bool
frequency, multinomial counts vs weights (chi-square bound), a random draw inside a
recurrence (a random walk's variance grows linearly), and dtype float64 draws."""
import sys, os, math
sys.path.insert(0, os.path.dirname(__file__))
import dataclasses
import numpy as np
from common import grab

B_, T_ = 64, 50


def _one(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    import tempo.api.recurrent_tensor as tpo
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        u = RT.uniform((), low=-2.0, high=3.0, domain=(b, t))
        sh = RT.random(())
        n = RT.normal((), mean=1.5, std=0.5, domain=(b, t))
        ri = RT.random_int(low=3, high=7, domain=(b, t))
        rb = RT.random_bool((), domain=(b, t))
        mn = tpo.multinomial(RT.const(np.array([0.1, 0.2, 0.7], np.float32)), 1, domain=(b, t))
        walk = RT.placeholder((), dtypes.float32, domain=(b, t))
        walk[b, 0] = RT.normal((), domain=(b,))
        walk[b, t + 1] = walk + RT.normal((), domain=(b, t))
        d64 = RT.random((), dtype=dtypes.float64, domain=(b, t))
        for k, v in dict(u=u, n=n, ri=ri, rb=rb, mn=mn, walk=walk, d64=d64).items():
            v[0:B, 0:T].sink_udf(grab(st, k))
        (sh + u * 0.0)[0:B, 0:T].sink_udf(grab(st, "sh"))
    ctx.compile({B: B_, T: T_}).execute()
    return st


def program(cfg):
    res = []
    c1 = dataclasses.replace(cfg, deterministic=True, seed=7)
    a, a2 = _one(c1), _one(c1)
    bz = _one(dataclasses.replace(cfg, deterministic=True, seed=8))
    res.append(("same_seed_same_draws", a["u"], a2["u"], 0))
    res.append(("other_seed_differs", np.array(bool(np.abs(a["u"] - bz["u"]).max() > 0.1)), np.array(True), 0))
    u = a["u"].astype(np.float64)
    res.append(("u_range", np.array([u.min() >= -2.0, u.max() < 3.0]), np.array([True, True]), 0))
    res.append(("u_mean", np.array(u.mean()), np.array(0.5), 0.1))
    res.append(("u_var", np.array(u.var()), np.array(25 / 12), 0.15))
    lag = np.corrcoef(u[:, 1:].ravel(), u[:, :-1].ravel())[0, 1]
    res.append(("u_lag1_corr", np.array(lag), np.array(0.0), 0.08))
    res.append(("u_b_corr", np.array(np.corrcoef(u[1:].ravel(), u[:-1].ravel())[0, 1]), np.array(0.0), 0.08))
    sh = a["sh"]
    res.append(("shared_draw_one_value", np.array(np.ptp(sh)), np.array(0.0), 1e-6))
    n = a["n"].astype(np.float64)
    res.append(("n_mean", np.array(n.mean()), np.array(1.5), 0.05))
    res.append(("n_std", np.array(n.std()), np.array(0.5), 0.04))
    z = np.sort((n.ravel() - 1.5) / 0.5)
    cdf = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in z])
    ks = np.max(np.abs(cdf - (np.arange(1, z.size + 1) / z.size)))
    res.append(("n_ks", np.array(ks), np.array(0.0), 0.05))
    ri = a["ri"]
    res.append(("ri_range", np.array(sorted(set(ri.ravel().tolist()))), np.array([3, 4, 5, 6]), 0))
    cnt = np.bincount(ri.ravel() - 3, minlength=4) / ri.size
    res.append(("ri_uniform", cnt, np.full(4, 0.25), 0.04))
    res.append(("rb_freq", np.array(a["rb"].mean()), np.array(0.5), 0.05))
    res.append(("rb_dtype", np.array(str(a["rb"].dtype)), np.array("bool"), 0))
    mn = a["mn"].ravel()
    mc = np.bincount(mn, minlength=3) / mn.size
    res.append(("multinomial_freq", mc, np.array([0.1, 0.2, 0.7]), 0.04))
    w = a["walk"].astype(np.float64)
    inc = np.diff(w, axis=1)  # fresh N(0, 1) steps: variance 1, uncorrelated in t
    res.append(("walk_step_var", np.array(inc.var()), np.array(1.0), 0.1))
    res.append(("walk_step_corr", np.array(np.corrcoef(inc[:, 1:].ravel(), inc[:, :-1].ravel())[0, 1]), np.array(0.0), 0.08))
    d = a["d64"]
    res.append(("d64_dtype", np.array(str(d.dtype)), np.array("float64"), 0))
    res.append(("d64_mean", np.array(d.mean()), np.array(0.5), 0.03))
    return res
