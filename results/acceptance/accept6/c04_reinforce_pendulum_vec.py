"""§6.4 REINFORCE on Pendulum with num_envs=3 (vectorised env: obs (3, 3), actions (3, 1)),
over (i, t): a Gaussian policy mu = 2 tanh(Linear(obs)), fixed sigma 0.6, Normal.sample,
returns by discounted_cum_sum(keep_symbolic_dim) of rew[i, 0:T] (shape (T, 3) -> back over t),
loss = -sum_t mean_env(log_prob * G_t) / T, SGD(momentum=0.9, nesterov=True). Checks: (a) each
recorded transition obeys gymnasium's Pendulum physics and reward from the recorded obs and
(clipped) action; (b) returns vs a numpy reverse scan; (c) losses of 3 iterations vs torch
(torch.distributions.Normal, torch.optim.SGD(nesterov)) replaying the recorded obs/actions."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

I_, T_, E, G, SIG = 3, 8, 3, 0.9, 0.6


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear
    from tempo.api.distributions import Normal
    from tempo.api.optim.optim import SGD
    from tempo.api.rl.env.env import Env
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(9)
    W = (rng.normal(size=(1, 3)) * 0.4).astype(np.float32)
    s = {}
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        env = Env.make_env("gym.Pendulum-v1", num_envs=E)
        pol = Linear(3, 1, domain=(i,), w_init_fun=lambda shape, dtype, domain: RT.const(W))
        obs = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(i, t))
        obs[i, 0] = env.reset(domain=(i,))
        mu = pol(obs).reshape((E, 1)).tanh() * 2.0  # Linear(3, 1) squeezes the column (§3.8 quirk)
        dist = Normal(mu, SIG)
        act = dist.sample()
        obs[i, t + 1], rew, term, trunc = env.step(act)
        ret = rew[i, 0:T].discounted_cum_sum(G, dim=0)
        lp = dist.log_prob(act).sum(-1)
        per = -(lp * ret).mean() / T_
        loss = per[i, 0:T].sum(0)
        opt = SGD(pol.parameters, [], lr=0.01, momentum=0.9, nesterov=True)
        loss.backward()
        opt.step()
        loss[0:I].sink_udf(grab(s, "loss"))
        ret[0:I, 0:T].sink_udf(grab(s, "ret"))
        obs[0:I, 0:T + 1].sink_udf(grab(s, "obs"))
        act[0:I, 0:T].sink_udf(grab(s, "act"))
        rew[0:I, 0:T].sink_udf(grab(s, "rew"))
    ctx.compile({I: I_, T: T_}).execute()
    O, A, R = s["obs"], s["act"], s["rew"]
    th = np.arctan2(O[..., 1], O[..., 0]); thd = O[..., 2]
    u = np.clip(A[..., 0], -2, 2)
    norm = (th[:, :-1] + np.pi) % (2 * np.pi) - np.pi
    rw = -(norm ** 2 + 0.1 * thd[:, :-1] ** 2 + 0.001 * u ** 2)
    nthd = np.clip(thd[:, :-1] + (3 * 10.0 / 2 * np.sin(th[:, :-1]) + 3.0 * u) * 0.05, -8, 8)
    nth = th[:, :-1] + nthd * 0.05
    dth = (nth - th[:, 1:] + np.pi) % (2 * np.pi) - np.pi
    ret = np.zeros_like(R); acc = np.zeros((I_, E), np.float32)
    for k in reversed(range(T_)):
        acc = R[:, k] + G * acc; ret[:, k] = acc
    w = torch.tensor(W, requires_grad=True); bb = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w, bb], lr=0.01, momentum=0.9, nesterov=True)
    losses = []
    for it in range(I_):
        o = torch.tensor(O[it, :T_]); a = torch.tensor(A[it])
        m = (o @ w.T + bb).tanh() * 2.0
        lp = torch.distributions.Normal(m, SIG).log_prob(a).sum(-1)
        L = (-(lp * torch.tensor(ret[it])).mean(-1) / T_).sum()
        losses.append(L.item()); opt.zero_grad(); L.backward(); opt.step()
    return [("reward_physics", R, rw.astype(np.float32), 1e-4), ("thdot_physics", thd[:, 1:], nthd, 1e-4),
            ("theta_physics", dth, np.zeros_like(dth), 1e-4), ("returns", s["ret"], ret, 1e-4),
            ("loss", s["loss"], np.array(losses, np.float32), 1e-4)]
