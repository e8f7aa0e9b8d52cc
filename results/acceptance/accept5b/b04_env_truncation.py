"""§6.4 Env: max_episode_steps truncation and continuous / 3-action envs accept4 did not run.
MountainCarContinuous-v0 (float action (1,)) with max_episode_steps=4 over (b, t), T=7: obs,
reward, terminated, truncated per step vs gymnasium stepped from the same initial state with
the same actions (truncated must be set at the 4th step, then absorbing: same obs, reward 0,
flags held); Acrobot-v1 (Discrete(3)) with num_envs=2 and max_episode_steps=3 over (b, t):
the (2,) flag vectors and (2, 6) observations vs gymnasium from the reset state."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, gymnasium as gym
from common import grab

B_, T_ = 2, 7


def ref_rollout(env_id, init_state, actions, max_steps):
    e = gym.make(env_id, max_episode_steps=max_steps)
    e.reset(seed=0)
    e.unwrapped.state = np.array(init_state, dtype=np.float64)
    obs, rew, term, trunc = [], [], [], []
    done = False
    last = None
    for k, a in enumerate(actions):
        if done:
            obs.append(last); rew.append(0.0); term.append(term[-1]); trunc.append(trunc[-1]); continue
        o, r, te, tr, _ = e.step(a)
        obs.append(np.asarray(o, np.float64)); rew.append(float(r)); term.append(bool(te)); trunc.append(bool(tr))
        last = obs[-1]; done = te or tr
    return np.array(obs), np.array(rew, np.float32), np.array(term), np.array(trunc)


def acro_state(o):
    return [np.arctan2(o[1], o[0]), np.arctan2(o[3], o[2]), o[4], o[5]]


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.rl.env.env import Env
    from tempo.core.dtype import dtypes
    ACT = np.array([[0.9, -0.5, 1.0, 0.3, -1.0, 0.2, 0.7], [-1.0, 1.0, -0.2, 0.5, 0.5, 0.1, 0.0]], np.float32)
    AAC = np.array([[[0, 2], [1, 2], [2, 0], [0, 0], [1, 1], [2, 2], [0, 1]],
                    [[2, 2], [2, 0], [1, 1], [0, 2], [1, 0], [0, 0], [2, 1]]], np.int64)
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        env = Env.make_env("gym.MountainCarContinuous-v0", max_episode_steps=4)
        obs = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(b, t))
        obs[b, 0] = env.reset(domain=(b,))
        a = RT.const(ACT).index(0, b).index(0, t).reshape((1,))
        obs[b, t + 1], rew, term, trunc = env.step(a)
        for k, v in dict(mc_obs=obs, mc_rew=rew, mc_term=term, mc_trunc=trunc).items():
            v[0:B, 0:T].sink_udf(grab(s, k))
        s["shapes"] = (tuple(env.action_shape), str(env.action_dtype))
        env2 = Env.make_env("gym.Acrobot-v1", num_envs=2, max_episode_steps=3)
        o2 = RT.placeholder(env2.observation_shape, env2.observation_dtype, domain=(b, t))
        o2[b, 0] = env2.reset(domain=(b,))
        a2 = RT.const(AAC).index(0, b).index(0, t).cast(env2.action_dtype)
        o2[b, t + 1], r2, te2, tr2 = env2.step(a2)
        for k, v in dict(ac_obs=o2, ac_rew=r2, ac_term=te2, ac_trunc=tr2).items():
            v[0:B, 0:T].sink_udf(grab(s, k))
    ctx.compile({B: B_, T: T_}).execute()
    out = []
    for bb in range(B_):
        o, r, te, tr = ref_rollout("MountainCarContinuous-v0", s["mc_obs"][bb, 0], [ACT[bb, k:k + 1] for k in range(T_)], 4)
        out += [(f"mc_obs{bb}", s["mc_obs"][bb, 1:], o[:-1].astype(np.float32), 1e-5),
                (f"mc_rew{bb}", s["mc_rew"][bb], r, 1e-5), (f"mc_term{bb}", s["mc_term"][bb], te, 0),
                (f"mc_trunc{bb}", s["mc_trunc"][bb], tr, 0)]
        for n in range(2):
            o, r, te, tr = ref_rollout("Acrobot-v1", acro_state(s["ac_obs"][bb, 0, n].astype(np.float64)), [int(AAC[bb, k, n]) for k in range(T_)], 3)
            out += [(f"ac_obs{bb}{n}", s["ac_obs"][bb, 1:, n], o[:-1].astype(np.float32), 2e-4),
                    (f"ac_rew{bb}{n}", s["ac_rew"][bb, :, n], r, 0), (f"ac_term{bb}{n}", s["ac_term"][bb, :, n], te, 0),
                    (f"ac_trunc{bb}{n}", s["ac_trunc"][bb, :, n], tr, 0)]
    return out


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        ok = a.shape == b_.shape and np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) <= r[3]
        print(r[0], a.shape, b_.shape, "ok" if ok else ("BAD", a.ravel()[:8], b_.ravel()[:8]))
