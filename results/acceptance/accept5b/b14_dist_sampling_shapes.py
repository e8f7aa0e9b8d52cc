"""§6.3 sampling with a `shape` argument and over a draw dim s (4000 fresh draws via
domain=(s,)): Normal(mu (2, 3), sigma (3,)).sample((5,)) has torch's shape (5, 2, 3), its
mean/std over all draws match mu/sigma (5 sigma-of-the-mean); Categorical(probs (2, 3)) .sample((7,))
is (7, 2) with row frequencies = probs (chi-square-ish bound); Uniform(low (3,), 2.0)
.sample((2,)) is (2, 3) inside [low, high) with mean (low+high)/2; rsample's pathwise gradient:
d/dmu mean(x) = 1, d/dsigma mean((x-mu)^2) = 2 sigma (Monte Carlo, 5 sigma)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

S_ = 4000


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.distributions import Categorical, Normal, Uniform
    MU = np.array([[0.5, -1.0, 2.0], [0.0, 1.0, -2.0]], np.float32)
    SG = np.array([0.5, 1.0, 2.0], np.float32)
    P = np.array([[0.2, 0.5, 0.3], [0.7, 0.0, 0.3]], np.float32)
    LOW = np.array([-1.0, 0.0, 1.5], np.float32)
    s = {}
    ctx = TempoContext(cfg, dim_names=("s",))
    ((sv, S),) = ctx.variables_and_bounds
    with ctx:
        n = Normal(RT.const(MU), RT.const(SG), domain=(sv,))
        x = n.sample((5,))
        s["nshape"] = tuple(x.shape)
        x[0:S].sink_udf(grab(s, "nx"))
        c = Categorical(probs=RT.const(P), domain=(sv,))
        k = c.sample((7,))
        s["cshape"] = tuple(k.shape)
        k[0:S].sink_udf(grab(s, "ck"))
        u = Uniform(RT.const(LOW), 2.0, domain=(sv,))
        ux = u.sample((2,))
        s["ushape"] = tuple(ux.shape)
        ux[0:S].sink_udf(grab(s, "ux"))
        mu = RT.const(np.float32(0.3), requires_grad=True)
        sg = RT.const(np.float32(1.5), requires_grad=True)
        r = Normal(mu, sg, domain=(sv,)).rsample()
        obj = r[0:S].mean(0) + ((r - mu.detach()) ** 2)[0:S].mean(0)
        obj.backward()
        mu.grad.sink_udf(grab(s, "gmu")); sg.grad.sink_udf(grab(s, "gsg"))
    ctx.compile({S: S_}).execute()
    nx = s["nx"].reshape(-1, 2, 3)
    z_mean = np.abs(nx.mean(0) - MU) / (SG / np.sqrt(nx.shape[0]))
    z_std = np.abs(nx.std(0) - SG) / (SG / np.sqrt(2 * nx.shape[0]))
    ck = s["ck"].reshape(-1, 2)
    freq = np.stack([np.bincount(ck[:, r], minlength=3) / ck.shape[0] for r in range(2)])
    fz = np.abs(freq - P) / np.sqrt(np.maximum(P * (1 - P), 1e-12) / ck.shape[0])
    ux = s["ux"].reshape(-1, 3)
    inside = np.all((ux >= LOW) & (ux < 2.0))
    uz = np.abs(ux.mean(0) - (LOW + 2) / 2) / ((2 - LOW) / np.sqrt(12 * ux.shape[0]))
    # rsample grads: d mean(x)/dmu = 1 exactly; d mean((x-mu)^2)/dsigma = 2 sigma mean(eps^2)
    return [("normal_shape", np.array(s["nshape"]), np.array((5, 2, 3)), 0), ("cat_shape", np.array(s["cshape"]), np.array((7, 2)), 0),
            ("unif_shape", np.array(s["ushape"]), np.array((2, 3)), 0),
            ("normal_mean_z<5", np.array(z_mean.max() < 5), np.array(True), 0), ("normal_std_z<5", np.array(z_std.max() < 5), np.array(True), 0),
            ("cat_freq_z<5", np.array(np.nan_to_num(fz).max() < 5), np.array(True), 0), ("cat_zero_class_never", np.array(freq[1, 1]), np.array(0.0), 0),
            ("unif_inside", np.array(inside), np.array(True), 0), ("unif_mean_z<5", np.array(uz.max() < 5), np.array(True), 0),
            ("rsample_dmu", s["gmu"], np.float32(1.0), 5 * 2 * 1.5 / np.sqrt(S_)), ("rsample_dsigma", s["gsg"], np.float32(3.0), 3.0 * 5 * np.sqrt(2 / S_))]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        ok = a.shape == b_.shape and (np.array_equal(a, b_) if a.dtype.kind in "b" else np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) <= r[3])
        print(r[0], a.ravel()[:4], b_.ravel()[:4], "ok" if ok else "BAD")
