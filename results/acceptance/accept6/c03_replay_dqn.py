"""§6.4 ReplayBuffer in a DQN-style learner over (i, t) on CartPole (never used by accept2-5):
actions epsilon-greedy from a user Q network (two Linear over the update domain i), every
transition (obs, act, rew, next_obs, term) inserted at (i, t); at each iteration a batch of 8
sampled with token=tok[0:i+1, 0:T] (after every insertion so far), TD loss with a detached
max-Q target, Adam. Checks: (a) every sampled tuple is one inserted transition (all five
items of one row from the same stored tuple) from an iteration <= i; (b) iteration i's
samples come from all (i+1)*T inserted so far (the last iteration sees earlier ones); (c) the
losses of all iterations equal torch.optim.Adam replaying the same samples."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

I_, T_, K, G = 4, 6, 8, 0.9


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import Adam
    from tempo.api.rl.env.env import Env
    from tempo.api.rl.replay_buffer.replay_buffer import ReplayBuffer
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(2)
    W1 = (rng.normal(size=(16, 4)) * 0.5).astype(np.float32); W2 = (rng.normal(size=(2, 16)) * 0.5).astype(np.float32)
    ci = lambda a: (lambda shape, dtype, domain: RT.const(a))
    s = {}
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        env = Env.make_env("gym.CartPole-v1")
        l1 = Linear(4, 16, domain=(i,), w_init_fun=ci(W1))
        l2 = Linear(16, 2, domain=(i,), w_init_fun=ci(W2))
        q = lambda x: l2(l1(x).relu())
        obs = RT.placeholder((4,), dtypes.float32, domain=(i, t))
        obs[i, 0] = env.reset(domain=(i,))
        greedy = q(obs).argmax(0)
        explore = RT.random(domain=(i, t)) < 0.4
        act = explore.where(RT.random_int(0, 2, domain=(i, t)).cast(greedy.dtype), greedy).cast(dtypes.int64)
        nobs, rew, term, trunc = env.step(act)
        obs[i, t + 1] = nobs
        buf = ReplayBuffer.make(1000, [(4,), (), (), (4,), ()],
                                [dtypes.float32, dtypes.int64, dtypes.float32, dtypes.float32, dtypes.bool_])
        tok = buf.insert((obs, act, rew, nobs, term))
        so, sa, sr, sn, st = buf.sample((i,), token=tok[0:i + 1, 0:T], num_samples=K)
        qa = (q(so) * sa.one_hot(2).cast(dtypes.float32)).sum(1)
        target = (sr + G * (1.0 - st.cast(dtypes.float32)) * q(sn).max(1)[0]).detach()
        loss = ((qa - target) ** 2).mean()
        opt = Adam(l1.parameters + l2.parameters, [], lr=0.01)
        loss.backward()
        opt.step()
        loss[0:I].sink_udf(grab(s, "loss"))
        for name, x in (("o", obs), ("a", act), ("r", rew), ("n", nobs), ("d", term)):
            x[0:I, 0:T].sink_udf(grab(s, name))
        for name, x in (("so", so), ("sa", sa), ("sr", sr), ("sn", sn), ("sd", st)):
            x[0:I].sink_udf(grab(s, name))
    ctx.compile({I: I_, T: T_}).execute()
    ins = [(s["o"][a, b], s["a"][a, b], s["r"][a, b], s["n"][a, b], s["d"][a, b]) for a in range(I_) for b in range(T_)]
    member, latest_seen = [], []
    for a in range(I_):
        for k in range(K):
            row = (s["so"][a, k], s["sa"][a, k], s["sr"][a, k], s["sn"][a, k], s["sd"][a, k])
            hits = [j for j, x in enumerate(ins) if all(np.array_equal(np.asarray(u), np.asarray(v)) for u, v in zip(x, row))]
            member.append(bool(hits) and min(hits) < (a + 1) * T_)
            if a == I_ - 1 and hits:
                latest_seen.append(min(hits) < a * T_)
    ps = [torch.tensor(W1, requires_grad=True), torch.zeros(16, requires_grad=True),
          torch.tensor(W2, requires_grad=True), torch.zeros(2, requires_grad=True)]
    opt = torch.optim.Adam(ps, lr=0.01)
    tq = lambda x: (x @ ps[0].T + ps[1]).relu() @ ps[2].T + ps[3]
    losses = []
    for a in range(I_):
        so_, sn_ = torch.tensor(s["so"][a]), torch.tensor(s["sn"][a])
        sa_ = torch.tensor(s["sa"][a].astype(np.int64))
        with torch.no_grad():
            y = torch.tensor(s["sr"][a]) + G * (1 - torch.tensor(s["sd"][a]).float()) * tq(sn_).max(1).values
        L = ((tq(so_).gather(1, sa_[:, None])[:, 0] - y) ** 2).mean()
        losses.append(L.item()); opt.zero_grad(); L.backward(); opt.step()
    return [("samples_are_inserted_tuples", np.array(member), np.ones(I_ * K, bool), 0),
            ("last_iteration_sees_earlier_ones", np.array(any(latest_seen)), np.array(True), 0),
            ("loss", s["loss"], np.array(losses, np.float32), 1e-5)]
