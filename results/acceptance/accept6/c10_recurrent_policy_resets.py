"""§6.1 GRUCell + §6.4 in an RL learner over (i, b, t): a recurrent Categorical policy on
CartPole whose hidden state is reset where the previous step terminated
(h[t+1] = (1 - term) * GRU(obs, h)), actions sampled from it, a user-written GAE with dones
(a backward recurrence adv[t] = delta + g*lam*(1 - term)*adv[t+1] over a placeholder), value
loss and entropy bonus, Adam over i; BPTT through the resets. Weights at i = 0 are read back
(sinks of gru.ih.w[0] etc.) into torch.nn.GRUCell; torch replays each iteration's recorded
obs/actions/terminations with torch.optim.Adam: losses of all iterations must match, and the
advantages of iteration 0."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

I_, B_, T_, H, G, LAM = 3, 2, 12, 6, 0.9, 0.8


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear
    from tempo.api.nn.rnn import GRUCell
    from tempo.api.distributions import Categorical
    from tempo.api.optim.optim import Adam
    from tempo.api.rl.env.env import Env
    from tempo.core.dtype import dtypes
    s = {}
    ctx = TempoContext(cfg, dim_names=("i", "b", "t"))
    (i, I), (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        env = Env.make_env("gym.CartPole-v1")
        gru = GRUCell(4, H, domain=(i,))
        pi = Linear(H, 2, domain=(i,))
        vf = Linear(H, 1, domain=(i,))
        obs = RT.placeholder((4,), dtypes.float32, domain=(i, b, t))
        obs[i, b, 0] = env.reset(domain=(i, b))
        h = RT.placeholder((H,), dtypes.float32, domain=(i, b, t))
        h[i, b, 0] = RT.zeros((H,))
        hn = gru(obs, h)
        dist = Categorical(logits=pi(hn))
        act = dist.sample()
        obs[i, b, t + 1], rew, term, trunc = env.step(act.cast(env.action_dtype))
        alive = 1.0 - term.cast(dtypes.float32)
        h[i, b, t + 1] = hn * alive
        v = vf(hn).squeeze(0)
        delta = (rew + G * alive * v[i, b, ie_min(t + 1, T - 1)] * (RT.from_symbol(t) < T - 1).cast(dtypes.float32) - v).detach()
        adv = RT.placeholder((), dtypes.float32, domain=(i, b, t))
        adv[i, b, T - 1] = delta
        adv[True] = delta + G * LAM * alive * adv[i, b, t + 1]
        ret = (adv + v).detach()
        per = -(dist.log_prob(act) * adv) + 0.5 * (ret - v) ** 2 - 0.01 * dist.entropy()
        loss = per[i, 0:B, 0:T].sum(0).sum(0) / (B_ * T_)
        opt = Adam(gru.parameters + pi.parameters + vf.parameters, [], lr=0.02)
        loss.backward()
        opt.step()
        loss[0:I].sink_udf(grab(s, "loss"))
        adv[0, 0:B, 0:T].sink_udf(grab(s, "adv0"))
        for name, x in (("obs", obs), ("act", act), ("term", term), ("rew", rew)):
            x[0:I, 0:B, 0:T].sink_udf(grab(s, name))
        for name, p in (("wih", gru.ih.w), ("bih", gru.ih.b), ("whh", gru.hh.w), ("bhh", gru.hh.b),
                        ("wpi", pi.w), ("bpi", pi.b), ("wv", vf.w), ("bv", vf.b)):
            p[0].sink_udf(grab(s, name))
    ctx.compile({I: I_, B: B_, T: T_}).execute()
    tg = torch.nn.GRUCell(4, H)
    lp, lv = torch.nn.Linear(H, 2), torch.nn.Linear(H, 1)
    with torch.no_grad():
        tg.weight_ih.copy_(torch.tensor(s["wih"])); tg.bias_ih.copy_(torch.tensor(s["bih"]))
        tg.weight_hh.copy_(torch.tensor(s["whh"])); tg.bias_hh.copy_(torch.tensor(s["bhh"]))
        for mod, w, bb in ((lp, "wpi", "bpi"), (lv, "wv", "bv")):
            mod.weight.copy_(torch.tensor(s[w])); mod.bias.copy_(torch.tensor(s[bb]))
    params = list(tg.parameters()) + list(lp.parameters()) + list(lv.parameters())
    opt = torch.optim.Adam(params, lr=0.02)
    losses, adv0 = [], None
    for it in range(I_):
        O = torch.tensor(s["obs"][it]); A = torch.tensor(s["act"][it].astype(np.int64))
        D = torch.tensor(s["term"][it].astype(np.float32)); R = torch.tensor(s["rew"][it])
        hh = torch.zeros(B_, H); hs = []
        for k in range(T_):
            hn = tg(O[:, k], hh); hs.append(hn); hh = hn * (1 - D[:, k:k + 1])
        Hs = torch.stack(hs, 1)
        d = torch.distributions.Categorical(logits=lp(Hs))
        v = lv(Hs)[..., 0]
        with torch.no_grad():
            nv = torch.cat([v[:, 1:], torch.zeros(B_, 1)], 1)
            delta = R + G * (1 - D) * nv - v
            adv = torch.zeros(B_, T_); last = torch.zeros(B_)
            for k in reversed(range(T_)):
                last = delta[:, k] + (G * LAM * (1 - D[:, k]) * last if k < T_ - 1 else 0.0)
                adv[:, k] = last
        if it == 0:
            adv0 = adv.numpy().copy()
        per = -(d.log_prob(A) * adv) + 0.5 * ((adv + v).detach() - v) ** 2 - 0.01 * d.entropy()
        L = per.sum() / (B_ * T_)
        losses.append(L.item()); opt.zero_grad(); L.backward(); opt.step()
    return [("adv_iteration0", s["adv0"], adv0, 1e-4), ("loss", s["loss"], np.array(losses, np.float32), 1e-4)]


def ie_min(a, b):
    from tempo.core import index_expr as ie
    return ie.min(a, b)
