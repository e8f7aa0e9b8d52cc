"""Does vectorisation change what c13 (PPO epochs, `c13_ppo_epochs.py`) samples?

Compiles c13's program (I = E = 3, B = 2, T = 8, CartPole) once with vectorisation on or
off and executes it R times (the torch generator's stream goes on across runs; the env's
resets are seeded per point and repeat). Per run it checks, against independent references:
  * the acting policy's probabilities equal softmax(obs @ W + b) with W, b from a torch
    replay of Adam over the recorded rollouts (the learner's weights after i updates);
  * Tempo's weights at every (i, e) equal that replay's;
  * every recorded transition equals gymnasium CartPole's own step from (obs[t], act[t]);
and over all runs: whether Tempo's clip fractions show clipping, and whether the sampled
actions follow the policy's probabilities (z of the count of action 1 per iteration i,
chi-square over 10 probability bins).
usage: PYTHONPATH=. python results/acceptance/accept6/repros/c13_vec_sampling.py [vec|novec]
       [runs] [lr]
Measured (accept6.md, c13): vec 200 runs, 139 with clipping, pooled z = -0.07, chi2 10.4."""
import sys

import gymnasium as gym
import numpy as np
import torch

I_, E_, B_, T_, G, EPS = 3, 3, 2, 8, 0.9, 0.2


def build(vec: bool, lr: float):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.distributions import Categorical
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import Adam
    from tempo.api.rl.env.env import Env
    from tempo.core.configs import ExecutionConfig
    from tempo.core.dtype import dtypes

    W = (np.random.default_rng(13).normal(size=(2, 4)) * 0.5).astype(np.float32)
    s: dict = {}

    def grab(key):
        return lambda v: s.__setitem__(key, np.array(v.detach().cpu().numpy()))

    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="torch", enable_vectorization=vec),
                       dim_names=("i", "e", "b", "t"))
    (i, I), (e, E), (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        env = Env.make_env("gym.CartPole-v1")
        pi = Linear(4, 2, domain=(i, e), w_init_fun=lambda shape, dtype, domain: RT.const(W))
        obs = RT.placeholder((4,), dtypes.float32, domain=(i, b, t))
        obs[i, b, 0] = env.reset(domain=(i, b))
        dist = Categorical(logits=obs @ pi.w[i, 0].T + pi.b[i, 0])
        act = dist.sample()
        obs[i, b, t + 1], rew, term, trunc = env.step(act.cast(env.action_dtype))
        old_lp = dist.log_prob(act).detach()
        adv = rew[i, b, 0:T].discounted_cum_sum(G, dim=0).detach()
        A = act[i, 0:B, 0:T].cast(dtypes.int64)
        lp = (pi(obs[i, 0:B, 0:T]).softmax(-1).ln() * A.one_hot(2).cast(dtypes.float32)).sum(-1)
        ratio = (lp - old_lp[i, 0:B, 0:T]).exp()
        Av = adv[i, 0:B, 0:T]
        loss = -RT.minimum(ratio * Av, ratio.clip(1 - EPS, 1 + EPS) * Av).mean()
        clipped = ((ratio - 1.0).abs() > EPS).cast(dtypes.float32).mean()
        opt = Adam(pi.parameters, [], lr=lr)
        loss.backward()
        opt.step()
        clipped[0:I, 0:E].sink_udf(grab("clip"))
        pi.w[0:I, 0:E].sink_udf(grab("w"))
        pi.b[0:I, 0:E].sink_udf(grab("bias"))
        dist.probs[0:I, 0:B, 0:T].sink_udf(grab("probs"))
        for name, x in (("obs", obs), ("act", act), ("rew", rew)):
            x[0:I, 0:B, 0:T].sink_udf(grab(name))
    return ctx.compile({I: I_, E: E_, B: B_, T: T_}), s, W


def replay(s: dict, W: np.ndarray, lr: float) -> tuple[float, float]:
    """max |acting probs - softmax(obs @ replay W)|, max |Tempo's W - replay W|."""
    w = torch.tensor(W, requires_grad=True)
    bb = torch.zeros(2, requires_grad=True)
    opt = torch.optim.Adam([w, bb], lr=lr)
    dp = dw = 0.0
    for it in range(I_):
        O = torch.tensor(s["obs"][it])
        A = torch.tensor(s["act"][it].astype(np.int64))
        R = s["rew"][it]
        ret, acc = np.zeros_like(R), np.zeros(B_, np.float32)
        for k in reversed(range(T_)):
            acc = R[:, k] + G * acc
            ret[:, k] = acc
        Av = torch.tensor(ret)
        with torch.no_grad():
            dp = max(dp, float(np.abs(torch.softmax(O @ w.T + bb, -1).numpy()
                                      - s["probs"][it]).max()))
            old = torch.distributions.Categorical(logits=O @ w.T + bb).log_prob(A)
        for ep in range(E_):
            dw = max(dw, float(np.abs(w.detach().numpy() - s["w"][it, ep]).max()),
                     float(np.abs(bb.detach().numpy() - s["bias"][it, ep]).max()))
            lp = torch.distributions.Categorical(logits=O @ w.T + bb).log_prob(A)
            ratio = (lp - old).exp()
            L = -torch.minimum(ratio * Av, ratio.clamp(1 - EPS, 1 + EPS) * Av).mean()
            opt.zero_grad()
            L.backward()
            opt.step()
    return dp, dw


def transitions(s: dict, env) -> float:
    worst = 0.0
    for idx in np.ndindex(*s["act"].shape[:2]):
        for t in range(T_ - 1):
            env.state = s["obs"][idx][t].astype(np.float64)
            o2, _, term, _, _ = env.step(int(s["act"][idx][t]))
            worst = max(worst, float(np.abs(o2 - s["obs"][idx][t + 1]).max()))
            if term:
                break
    return worst


def main() -> None:
    vec = (sys.argv[1] if len(sys.argv) > 1 else "vec") == "vec"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    lr = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05
    exe, s, W = build(vec, lr)
    from tempo.core import ops
    for op in exe.sdg.ops.values():  # the draws: batched over b when vectorised
        if isinstance(op, ops.RandOp):
            print(f"  draw {op.op_id}: domain {op.domain}, shape {op.shape}")
    env = gym.make("CartPole-v1").unwrapped
    env.reset(seed=0)
    clips, probs, acts, dps, dws, dts = [], [], [], [], [], []
    for _ in range(runs):
        exe.execute()
        clips.append(s["clip"].copy())
        probs.append(s["probs"][..., 1].copy())
        acts.append(s["act"].astype(np.float64))
        dp, dw = replay(s, W, lr)
        dps.append(dp)
        dws.append(dw)
        dts.append(transitions(s, env))
    c, p, a = np.array(clips), np.array(probs), np.array(acts)
    print(f"vectorisation {'on' if vec else 'off'}, lr {lr}, {runs} runs")
    print(f"  max |acting probs - softmax(obs @ replayed W)| {max(dps):.1e}; "
          f"max |W - replayed W| {max(dws):.1e}; max |obs[t+1] - CartPole step| {max(dts):.1e}")
    print(f"  runs with some clipping: {int(np.sum(c.max((1, 2)) > 0))}/{runs}; "
          f"mean clip fraction {c.mean():.4f}")
    for i in range(I_):
        pi_, ai = p[:, i].ravel(), a[:, i].ravel()
        z = (ai.sum() - pi_.sum()) / np.sqrt((pi_ * (1 - pi_)).sum())
        print(f"  i = {i}: {ai.size} actions, {ai.sum():.0f} ones, expected {pi_.sum():.1f}, "
              f"z = {z:.2f}")
    pf, af = p.ravel(), a.ravel()
    edges = np.quantile(pf, np.linspace(0, 1, 11))
    k = np.clip(np.searchsorted(edges, pf, side="right") - 1, 0, 9)
    chi = sum((af[k == j].sum() - pf[k == j].sum()) ** 2
              / (pf[k == j] * (1 - pf[k == j])).sum() for j in range(10))
    print(f"  chi-square over 10 probability bins (df 10): {chi:.1f}")


if __name__ == "__main__":
    main()
