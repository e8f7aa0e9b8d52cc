"""§6.3 distributions vs torch.distributions, the shapes a policy network produces: Normal with
mu (4, 3) and a state-independent sigma (3,) or a Python float sigma -- log_prob, entropy,
cdf, mean/mode/stddev/variance (values AND shapes: torch broadcasts to the batch shape), and
gradients of log_prob / entropy w.r.t. mu and log-sigma; Uniform(low (3,), high float):
log_prob of a (2, 3) value, entropy, cdf (clamped outside), mean/stddev/variance;
Categorical(probs) with an un-normalised row containing a 0 (entropy, log_prob incl. the
-inf class, mode), Categorical(logits).log_prob of a (2, 4) batch of actions against (4, K)
logits (sample dims first), and the gradient of log_prob+entropy w.r.t. the logits."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab
D = torch.distributions


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.distributions import Categorical, Normal, Uniform
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(3)
    MU = rng.normal(size=(4, 3)).astype(np.float32)
    LS = (rng.normal(size=(3,)) * 0.3).astype(np.float32)
    XN = rng.normal(size=(4, 3)).astype(np.float32)
    LOW = np.array([-1.0, 0.0, 0.5], np.float32)
    XU = np.array([[-2.0, 0.2, 0.7], [0.0, 1.5, 1.9]], np.float32)
    P = np.array([[0.2, 0.0, 0.6, 0.2], [1.0, 2.0, 3.0, 4.0]], np.float32)   # un-normalised
    LG = rng.normal(size=(4, 5)).astype(np.float32)
    ACT = np.array([[0, 4, 2, 1], [3, 3, 0, 4]], np.int64)
    ctx = TempoContext(cfg, num_dims=0)
    s = {}
    g = lambda k: grab(s, k)
    with ctx:
        mu = RT.const(MU, requires_grad=True)
        ls = RT.const(LS, requires_grad=True)
        n = Normal(mu, ls.exp())
        lp = n.log_prob(RT.const(XN))
        ent = n.entropy()
        lp.sink_udf(g("n_lp")); ent.sink_udf(g("n_ent")); n.cdf(RT.const(XN)).sink_udf(g("n_cdf"))
        n.stddev.sink_udf(g("n_std")); n.variance.sink_udf(g("n_var")); n.mean.sink_udf(g("n_mean"))
        (lp.sum() + ent.sum()).backward()
        mu.grad.sink_udf(g("n_gmu")); ls.grad.sink_udf(g("n_gls"))
        n2 = Normal(RT.const(MU), 0.7)
        n2.entropy().sink_udf(g("n2_ent")); n2.log_prob(RT.const(XN)).sink_udf(g("n2_lp"))
        n2.stddev.sink_udf(g("n2_std"))
        u = Uniform(RT.const(LOW), 2.0)
        u.log_prob(RT.const(XU)).sink_udf(g("u_lp")); u.entropy().sink_udf(g("u_ent"))
        u.cdf(RT.const(XU)).sink_udf(g("u_cdf")); u.mean.sink_udf(g("u_mean"))
        u.stddev.sink_udf(g("u_std")); u.variance.sink_udf(g("u_var"))
        c = Categorical(probs=RT.const(P))
        c.entropy().sink_udf(g("c_ent")); c.mode.sink_udf(g("c_mode"))
        c.log_prob(RT.const(np.array([1, 2], np.int64))).sink_udf(g("c_lp"))
        lg = RT.const(LG, requires_grad=True)
        c2 = Categorical(logits=lg)
        lp2 = c2.log_prob(RT.const(ACT))
        lp2.sink_udf(g("c2_lp"))
        (lp2.sum() + c2.entropy().sum()).backward()
        lg.grad.sink_udf(g("c2_glg"))
    ctx.compile({}).execute()
    out = []
    tmu = torch.tensor(MU, requires_grad=True); tls = torch.tensor(LS, requires_grad=True)
    tn = D.Normal(tmu, tls.exp())
    tlp, tent = tn.log_prob(torch.tensor(XN)), tn.entropy()
    (tlp.sum() + tent.sum()).backward()
    tn2 = D.Normal(torch.tensor(MU), 0.7)
    tu = D.Uniform(torch.tensor(LOW), torch.tensor(2.0))
    tc = D.Categorical(probs=torch.tensor(P))
    tlg = torch.tensor(LG, requires_grad=True)
    tc2 = D.Categorical(logits=tlg)
    tlp2 = tc2.log_prob(torch.tensor(ACT))
    (tlp2.sum() + tc2.entropy().sum()).backward()
    xu = torch.tensor(XU)
    ref = dict(n_lp=tlp, n_ent=tent, n_cdf=tn.cdf(torch.tensor(XN)), n_std=tn.stddev, n_var=tn.variance,
               n_mean=tn.mean, n_gmu=tmu.grad, n_gls=tls.grad, n2_ent=tn2.entropy(),
               n2_lp=tn2.log_prob(torch.tensor(XN)), n2_std=tn2.stddev,
               u_lp=-torch.log(torch.tensor(2.0) - torch.tensor(LOW)).expand(2, 3),   # torch's in-range value, no range check (API)
               u_ent=tu.entropy(), u_cdf=((xu - tu.low) / (tu.high - tu.low)).clamp(0, 1), u_mean=tu.mean,
               u_std=tu.stddev, u_var=tu.variance, c_ent=tc.entropy(), c_mode=tc.mode,
               c_lp=tc.log_prob(torch.tensor([1, 2])), c2_lp=tlp2, c2_glg=tlg.grad)
    for k, v in ref.items():
        v = v.detach().numpy()
        got = s[k]
        if k == "c_lp":   # -inf entry
            out.append((k + "_isinf", np.isinf(got), np.isinf(v), 0))
            got, v = np.where(np.isinf(got), 0, got), np.where(np.isinf(v), 0, v)
        out.append((k, got, v if k != "c_mode" else v.astype(got.dtype), 1e-5 if k != "c_mode" else 0))
    return out


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        print(r[0], a.shape, b_.shape, np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "SHAPE")
