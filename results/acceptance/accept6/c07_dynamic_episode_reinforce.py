"""§7.10 dynamic bounds in an RL learner: CartPole REINFORCE over (i, t) where each episode
ends at its own termination: {T: (40, term)} (a boolean RT over (i, t): the t loop of
iteration i stops at the first terminated step). Inside: Categorical policy from a Linear over
i, returns by discounted_cum_sum of r[i, 0:T] (a slice to the DYNAMIC bound), loss
-sum_t log_prob * G_t / 10, Adam. Checks: (a) episode lengths = the first terminated step of
each recorded episode (a gymnasium CartPole reset to the recorded first obs and stepped with
the recorded actions terminates at the same step, and nothing runs past it); (b) returns vs a
numpy scan over the episode only; (c) losses vs torch replaying the episodes."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab_list

I_, MAXT, G = 3, 40, 0.95


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear
    from tempo.api.distributions import Categorical
    from tempo.api.optim.optim import Adam
    from tempo.api.rl.env.env import Env
    from tempo.core.dtype import dtypes
    import gymnasium as gym
    rng = np.random.default_rng(3)
    W = (rng.normal(size=(2, 4)) * 0.3).astype(np.float32)
    s = {}
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        env = Env.make_env("gym.CartPole-v1")
        pi = Linear(4, 2, domain=(i,), w_init_fun=lambda shape, dtype, domain: RT.const(W))
        obs = RT.placeholder((4,), dtypes.float32, domain=(i, t))
        obs[i, 0] = env.reset(domain=(i,))
        dist = Categorical(logits=pi(obs))
        act = dist.sample()
        obs[i, t + 1], rew, term, trunc = env.step(act.cast(env.action_dtype))
        ret = rew[i, 0:T].discounted_cum_sum(G, dim=0)
        per = -(dist.log_prob(act) * ret) / 10.0
        loss = per[i, 0:T].sum(0)
        opt = Adam(pi.parameters, [], lr=0.05)
        loss.backward()
        opt.step()
        loss.sink_udf(grab_list(s, "loss"))
        obs.sink_udf(grab_list(s, "obs"))
        act.sink_udf(grab_list(s, "act"))
        rew.sink_udf(grab_list(s, "rew"))
        term.sink_udf(grab_list(s, "term"))
        ret.sink_udf(grab_list(s, "ret"))
        (RT.from_symbol(i) + RT.from_symbol(t) * 0).sink_udf(grab_list(s, "ep"))
    ctx.compile({I: I_, T: (MAXT, term)}).execute()
    ep = np.array(s["ep"]).astype(int)
    lens = [int((ep == k).sum()) for k in range(I_)]
    O = np.array(s["obs"]); A = np.array(s["act"]).astype(int); R = np.array(s["rew"]); D = np.array(s["term"]).astype(bool)
    starts = np.cumsum([0] + lens)
    want_lens, rets, gym_ok = [], [], []
    for k in range(I_):
        o, a, d = O[starts[k]:starts[k + 1]], A[starts[k]:starts[k + 1]], D[starts[k]:starts[k + 1]]
        e = gym.make("CartPole-v1").unwrapped; e.reset(seed=0); e.state = o[0].astype(np.float64)
        n = 0
        for tt in range(len(a)):
            _, _, dn, _, _ = e.step(int(a[tt])); n += 1
            gym_ok.append(bool(dn) == bool(d[tt]))
            if dn:
                break
        want_lens.append(min(n, MAXT))
        r = R[starts[k]:starts[k + 1]]; g = np.zeros_like(r); acc = 0.0
        for tt in reversed(range(len(r))):
            acc = r[tt] + G * acc; g[tt] = acc
        rets.append(g)
    w = torch.tensor(W, requires_grad=True); bb = torch.zeros(2, requires_grad=True)
    opt = torch.optim.Adam([w, bb], lr=0.05)
    losses = []
    for k in range(I_):
        o = torch.tensor(O[starts[k]:starts[k + 1]]); a = torch.tensor(A[starts[k]:starts[k + 1]])
        lp = torch.distributions.Categorical(logits=o @ w.T + bb).log_prob(a)
        L = (-(lp * torch.tensor(rets[k])) / 10.0).sum()
        losses.append(L.item()); opt.zero_grad(); L.backward(); opt.step()
    return [("episode_lengths", np.array(lens), np.array(want_lens), 0),
            ("terminations_match_gym", np.array(gym_ok), np.ones(len(gym_ok), bool), 0),
            ("returns", np.array(s["ret"]).reshape(-1), np.concatenate(rets).astype(np.float32), 1e-4),
            ("loss", np.array(s["loss"]).reshape(-1), np.array(losses, np.float32), 1e-4)]
