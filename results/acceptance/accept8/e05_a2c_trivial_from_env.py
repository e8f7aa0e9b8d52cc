"""§6.4 `ModelBuilder.from_env(hidden, domain, env, actor_critic=True)` (never used by
accept2-7) on the `trivial.trivial` env with discrete actions, and
`bootstrapped_n_step_returns` (used once before): an A2C learner over (i, t): obs[i, 0] =
env.reset(domain=(i,)), obs[i, t+1], r, term, trunc = env.step(a) (tuple unpacking),
(a, v) = net(obs.unsqueeze(0)), log_prob / entropy of the last forward, returns n=3,
gamma 0.9 (bootstrapped from v[t+3] where it exists), loss = mean_t(-logp * adv + 0.5 (G - v)^2
- 0.01 H), Adam over i. Reference: the env's documented dynamics (s' = clip(s + 0.05 (2a-1)),
reward -|s'|) checked on the recorded transitions, then torch replaying each iteration's
recorded obs/actions with the initial weights read back at i = 0 (flat_state_dict) and
torch.optim.Adam. Checks: transitions, returns of iteration 0, the losses of all i."""
import numpy as np
import torch

from common8 import np_of

I_, T_, N_STEP, GAMMA, LR = 4, 6, 3, 0.9, 0.02


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.optim.optim import Adam
    from tempo.api.rl import bootstrapped_n_step_returns
    from tempo.api.rl.env.env import Env
    from tempo.api.rl.networks.model_builder import ModelBuilder

    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        env = Env.make_env("trivial.trivial", observation_shape=(3,), continuous=False,
                           max_episode_steps=50)
        net = ModelBuilder.from_env([5, 4], (i,), env, actor_critic=True)
        obs = RT.placeholder((3,), env.observation_dtype, domain=(i, t))
        obs[i, 0] = env.reset(domain=(i,))
        a, v = net(obs.unsqueeze(0))
        a, v = a.squeeze(0), v.squeeze(0)
        logp = net.log_prob(a.unsqueeze(0)).squeeze(0)
        ent = net.entropy().squeeze(0)
        obs[i, t + 1], r, term, trunc = env.step(a)
        G = bootstrapped_n_step_returns(r, v, t, n=N_STEP, gamma=GAMMA)
        adv = (G - v).detach()
        per_t = -logp * adv + 0.5 * (G - v) ** 2 - 0.01 * ent
        loss = per_t[i, 0:T].mean()
        loss.backward()
        Adam(net.parameters, net.buffers, lr=LR).step()
        names = list(net.flat_state_dict().keys())
        for k, p in net.flat_state_dict().items():
            p[0].sink_udf(lambda x, k=k: st.__setitem__(k, np_of(x)))
        obs[0:I, 0:T + 1].sink_udf(lambda x: st.__setitem__("obs", np_of(x)))
        a[0:I, 0:T].sink_udf(lambda x: st.__setitem__("a", np_of(x)))
        r[0:I, 0:T].sink_udf(lambda x: st.__setitem__("r", np_of(x)))
        G[0, 0:T].sink_udf(lambda x: st.__setitem__("G0", np_of(x)))
        loss[0:I].sink_udf(lambda x: st.__setitem__("loss", np_of(x)))
    ctx.compile({I: I_, T: T_}).execute()

    obs_, a_, r_ = st["obs"].astype(np.float64), st["a"].astype(np.int64), st["r"]
    s = obs_[:, :, 0]
    nxt = np.clip(s[:, :-1] + 0.05 * (2 * a_ - 1), -1, 1)
    P = {k: torch.tensor(st[k], requires_grad=True) for k in names}
    W = lambda k: P[k]  # noqa: E731
    opt = torch.optim.Adam([P[k] for k in names], lr=LR)
    losses, G0 = [], None
    for it in range(I_):
        x = torch.tensor(st["obs"][it, :T_])
        h = torch.tanh(x @ W("trunk.layers_0.lin.param_0").T + W("trunk.layers_0.lin.param_1"))
        h = torch.tanh(h @ W("trunk.layers_1.lin.param_0").T + W("trunk.layers_1.lin.param_1"))
        logits = h @ W("head.param_0").T + W("head.param_1")
        val = (h @ W("value_head.param_0").T + W("value_head.param_1"))[:, 0]
        dist = torch.distributions.Categorical(logits=logits)
        act = torch.tensor(a_[it])
        rew = torch.tensor(r_[it])
        vd = val.detach()
        G = torch.zeros(T_)
        for ti in range(T_):
            L = min(N_STEP, T_ - ti)
            G[ti] = sum(GAMMA ** k * rew[ti + k] for k in range(L))
            if ti + L < T_:
                G[ti] += GAMMA ** L * vd[ti + L]
        if it == 0:
            G0 = G.numpy().copy()
        adv = G - vd
        loss = (-dist.log_prob(act) * adv + 0.5 * (G - val) ** 2 - 0.01 * dist.entropy()).mean()
        losses.append(loss.item())
        opt.zero_grad(); loss.backward(); opt.step()
    return [("obs components equal", obs_[..., 1:], np.repeat(obs_[..., :1], 2, -1), 0),
            ("dynamics s' = clip(s + 0.05(2a-1))", s[:, 1:], nxt, 1e-6),
            ("reward -|s'|", r_, -np.abs(nxt), 1e-6),
            ("G of iteration 0", st["G0"], G0, 1e-5),
            ("loss", st["loss"], np.array(losses, np.float32), 2e-5)]
