"""An A2C-like learner over (i, b, t): CartPole, Linear actor/critic, Categorical sampling,
rl.gae advantages (lambda 0.9), entropy bonus, Adam over iterations i. Reference: torch re-runs
each iteration's loss from the recorded observations/actions with torch.optim.Adam
(iteration i uses the weights after i updates), so the losses of all iterations must match."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

I_, B_, T_ = 3, 2, 10
G, LAM = 0.95, 0.9

def np_gae(r, v, g, lam):
    adv = np.zeros_like(r); last = 0.0
    for k in reversed(range(len(r))):
        nv = v[k + 1] if k + 1 < len(r) else 0.0
        last = r[k] + g * nv - v[k] + g * lam * last
        adv[k] = last
    return adv

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api import rl
    from tempo.api.nn import Linear
    from tempo.api.distributions import Categorical
    from tempo.api.optim.optim import Adam
    from tempo.api.rl.env.env import Env
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(7)
    W1 = (rng.normal(size=(8, 4)) * 0.5).astype(np.float32); W2 = (rng.normal(size=(2, 8)) * 0.5).astype(np.float32)
    Wv = (rng.normal(size=(1, 8)) * 0.5).astype(np.float32)
    ci = lambda a: (lambda shape, dtype, domain: RT.const(a))
    ctx = TempoContext(cfg, dim_names=("i", "b", "t"))
    (i, I), (b, B), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        env = Env.make_env("gym.CartPole-v1")
        enc = Linear(4, 8, domain=(i,), w_init_fun=ci(W1))
        pi = Linear(8, 2, domain=(i,), w_init_fun=ci(W2))
        vf = Linear(8, 1, domain=(i,), w_init_fun=ci(Wv))
        obs = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(i, b, t))
        obs[i, b, 0] = env.reset(domain=(i, b))
        hid = enc(obs).tanh()
        dist = Categorical(logits=pi(hid))
        act = dist.sample()
        obs[i, b, t + 1], rew, term, trunc = env.step(act.cast(env.action_dtype))
        v = vf(hid).squeeze(0)
        adv = rl.gae(rew, v, t, gamma=G, lambda_=LAM)
        lp = dist.log_prob(act)
        ent = dist.entropy()
        alive = 1.0 - term.cast(dtypes.float32)
        ret = (adv + v).detach()
        per = -(lp * adv) + 0.5 * (ret - v) ** 2 - 0.01 * ent
        loss = per[i, 0:B, 0:T].sum(0).sum(0) / (B_ * T_)
        opt = Adam(enc.parameters + pi.parameters + vf.parameters, [], lr=0.01)
        loss.backward()
        opt.step()
        loss[0:I].sink_udf(grab(s, "loss"))
        obs[0:I, 0:B, 0:T].sink_udf(grab(s, "obs"))
        act[0:I, 0:B, 0:T].sink_udf(grab(s, "act"))
        rew[0:I, 0:B, 0:T].sink_udf(grab(s, "rew"))
    ctx.compile({I: I_, B: B_, T: T_}).execute()
    O, A, R = s["obs"], s["act"].astype(np.int64), s["rew"]
    ps = [torch.tensor(W1, requires_grad=True), torch.zeros(8, requires_grad=True), torch.tensor(W2, requires_grad=True),
          torch.zeros(2, requires_grad=True), torch.tensor(Wv, requires_grad=True), torch.zeros(1, requires_grad=True)]
    opt = torch.optim.Adam(ps, lr=0.01)
    losses = []
    for it in range(I_):
        o = torch.tensor(O[it]); a = torch.tensor(A[it].reshape(B_, T_))
        h = (o @ ps[0].T + ps[1]).tanh()
        lg = h @ ps[2].T + ps[3]
        d = torch.distributions.Categorical(logits=lg)
        v = (h @ ps[4].T + ps[5])[..., 0]
        advs = torch.tensor(np.stack([np_gae(R[it, k], v[k].detach().numpy(), G, LAM) for k in range(B_)]))
        ret = advs + v.detach()
        per = -(d.log_prob(a) * advs) + 0.5 * (ret - v) ** 2 - 0.01 * d.entropy()
        L = per.sum() / (B_ * T_)
        losses.append(L.item()); opt.zero_grad(); L.backward(); opt.step()
    return [("loss", s["loss"], np.array(losses, np.float32), 1e-4),
            ("some_episode_ends_or_runs", np.array(R.sum() > 0), np.array(True), 0)]
