"""§6.3 Uniform / Normal / Categorical over a sample dim n: log_prob, entropy, cdf, mean/stddev/
variance vs torch.distributions; sample histograms / moments over N=4000 draws; Categorical
from unnormalised probs; Categorical.mode; Normal.log_prob of its own sample is detached."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

N_ = 4000

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.distributions import Categorical, Normal, Uniform
    from tempo.core.dtype import dtypes
    ctx = TempoContext(cfg, dim_names=("n",))
    ((n, N),) = ctx.variables_and_bounds
    s = {}
    lo, hi = np.array([-1.0, 2.0], np.float32), np.array([3.0, 2.5], np.float32)
    mu, sg = np.array([0.5, -2.0], np.float32), np.array([1.5, 0.3], np.float32)
    P = np.array([2.0, 1.0, 0.5, 0.5], np.float32)
    V = np.array([-0.5, 2.1], np.float32)
    with ctx:
        u = Uniform(RT.const(lo), RT.const(hi), domain=(n,))
        nd = Normal(RT.const(mu), RT.const(sg), domain=(n,))
        c = Categorical(probs=RT.const(P), domain=(n,))
        su, sn, sc = u.sample(), nd.sample(), c.sample()
        su[0:N].sink_udf(grab(s, "su")); sn[0:N].sink_udf(grab(s, "sn")); sc[0:N].sink_udf(grab(s, "sc"))
        vals = {
            "u_lp": u.log_prob(RT.const(V)), "u_ent": u.entropy(), "u_cdf": u.cdf(RT.const(V)),
            "u_mean": u.mean, "u_std": u.stddev, "u_var": u.variance,
            "n_lp": nd.log_prob(RT.const(V)), "n_ent": nd.entropy(), "n_cdf": nd.cdf(RT.const(V)),
            "n_mean": nd.mean, "n_mode": nd.mode, "n_std": nd.stddev, "n_var": nd.variance,
            "c_lp": c.log_prob(RT.const(np.array([0, 2, 3])).cast(dtypes.default_int)), "c_ent": c.entropy(), "c_mode": c.mode,
        }
        for k, v in vals.items():
            v.sink_udf(grab(s, k))
    ctx.compile({N: N_}).execute()
    tu = torch.distributions.Uniform(torch.tensor(lo), torch.tensor(hi))
    tn = torch.distributions.Normal(torch.tensor(mu), torch.tensor(sg))
    tc = torch.distributions.Categorical(probs=torch.tensor(P))
    tv = torch.tensor(V)
    ref = {
        "u_lp": -torch.log(torch.tensor(hi - lo)), "u_ent": tu.entropy(), "u_cdf": tu.cdf(tv.clamp(torch.tensor(lo), torch.tensor(hi))),
        "u_mean": tu.mean, "u_std": tu.stddev, "u_var": tu.variance,
        "n_lp": tn.log_prob(tv), "n_ent": tn.entropy(), "n_cdf": tn.cdf(tv), "n_mean": tn.mean, "n_mode": tn.mode,
        "n_std": tn.stddev, "n_var": tn.variance,
        "c_lp": tc.log_prob(torch.tensor([0, 2, 3])), "c_ent": tc.entropy(), "c_mode": tc.mode,
    }
    res = [(k, s[k], ref[k].numpy(), 1e-5) for k in ref]
    su, sn, sc = s["su"], s["sn"], s["sc"]
    # moments within ~5 standard errors
    res.append(("u_in_range", np.all((su >= lo) & (su < hi)), np.array(True), 0))
    res.append(("u_mean_emp", su.mean(0), (lo + hi) / 2, 5 * float(np.max((hi - lo) / np.sqrt(12 * N_)))))
    res.append(("n_mean_emp", sn.mean(0), mu, 5 * float(sg.max() / np.sqrt(N_))))
    res.append(("n_std_emp", sn.std(0), sg, 0.05 * float(sg.max())))
    freq = np.bincount(sc.astype(np.int64).ravel(), minlength=4) / N_
    res.append(("c_hist", freq, P / P.sum(), 0.03))
    res.append(("u_draws_vary", np.array(len(np.unique(su[:, 0])) > N_ // 2), np.array(True), 0))
    return res
