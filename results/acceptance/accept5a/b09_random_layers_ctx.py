"""Random draws, a permanent layer dimension and context helpers, vs numpy:
random(domain=(t,)) is fresh per t while random() without a domain is one draw shared by all
t (API 3.3); uniform(low, high) / random_int range / normal(mean, std) moments over many
fresh draws; deterministic=True with a seed gives the same draws in two executors, another
seed different ones; ctx.new_perm_var(L) adds a layer dim l after t (not in ctx.variables,
in ctx.universe) used by a residual stream r[t, l+1] = r + tanh(r @ W[l]) read at l = L-1;
nested domain_ctx; tag_region / tag_group / forbid_dedup leave values unchanged."""
import sys, os, dataclasses
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

T_, L_, D_, N_ = 4, 3, 3, 4000

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    res = []
    # 1. fresh vs shared draws
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    s = {}
    with ctx:
        fresh = RT.random((3,), domain=(t,))
        shared = RT.random((3,)) + RT.from_symbol(t).cast(dtypes.float32) * 0.0
        fresh[0:T].sink_udf(grab(s, "fresh"))
        shared[0:T].sink_udf(grab(s, "shared"))
        u = RT.uniform((N_,), low=-2.0, high=3.0, domain=(t,))
        ri = RT.random_int(low=2, high=7, shape=(N_,), domain=(t,))
        nm = RT.normal((N_,), mean=1.5, std=0.5, domain=(t,))
        u[0:T].sink_udf(grab(s, "u"))
        ri[0:T].sink_udf(grab(s, "ri"))
        nm[0:T].sink_udf(grab(s, "nm"))
    ctx.compile({T: T_}).execute()
    f, sh = s["fresh"], s["shared"]
    res.append(("fresh_differs", np.array(bool(np.abs(f[1:] - f[:1]).min() > 0)), np.array(True), 0))
    res.append(("shared_same", sh - sh[:1], np.zeros_like(sh), 0))
    uu, rr, nn = s["u"], s["ri"], s["nm"]
    res.append(("uniform_range", np.array([uu.min() >= -2.0, uu.max() < 3.0]), np.array([True, True]), 0))
    res.append(("uniform_mean", np.array(uu.mean()), np.array(0.5), 0.05))
    res.append(("randint_values", np.unique(rr), np.arange(2, 7), 0))
    res.append(("normal_mean_std", np.array([nn.mean(), nn.std()]), np.array([1.5, 0.5]), 0.02))
    # 2. seeds
    def draw(seed):
        c2 = TempoContext(dataclasses.replace(cfg, deterministic=True, seed=seed), dim_names=("t",))
        ((t2, T2),) = c2.variables_and_bounds
        out = {}
        with c2:
            RT.random((5,), domain=(t2,))[0:T2].sink_udf(grab(out, "r"))
        c2.compile({T2: 3}).execute()
        return out["r"]
    a, b, c = draw(3), draw(3), draw(4)
    res.append(("same_seed_same_draws", a, b, 0))
    res.append(("other_seed_other_draws", np.array(bool(np.abs(a - c).max() > 0)), np.array(True), 0))
    # 3. layer dim
    rng = np.random.default_rng(2)
    W = (rng.normal(size=(L_, D_, D_)) * 0.4).astype(np.float32)
    X = rng.normal(size=(T_, D_)).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    l, L = ctx.new_perm_var(L_)
    s = {}
    names = ([str(v) for v in ctx.variables], [str(v) for v in ctx.universe.variables])
    with ctx:
        with ctx.domain_ctx((t,)):
            with ctx.domain_ctx((t, l)):
                r = RT.placeholder((D_,), dtypes.float32)
            x = RT.placeholder((D_,), dtypes.float32)
        x[True] = RT.const(X).index(0, t)
        w = RT.const(W).index(0, l)
        with ctx.tag_region("layers"), ctx.tag_group("g"), ctx.forbid_dedup():
            r[t, 0] = x
            r[t, l + 1] = r + (r @ w[l]).tanh()
        out = r[t, L - 1] + r[t, 0] * 0.0
        out[0:T].sink_udf(grab(s, "out"))
    ctx.compile({T: T_}).execute()
    want = []
    for tt in range(T_):
        v = X[tt]
        for ll in range(L_ - 1):
            v = v + np.tanh(v @ W[ll])
        want.append(v)
    res.append(("layers", s["out"], np.array(want), 1e-4))
    res.append(("perm_var_names", np.array(names[0] + ["|"] + names[1]), np.array(["t", "|", "t", str(l)]), 0))
    res.append(("placeholder_domains", np.array([str(r.domain.variables), str(x.domain.variables)]),
                np.array([f"(t, {l})", "(t,)"]), 0))
    return res
