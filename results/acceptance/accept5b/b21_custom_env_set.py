"""§6.4 custom env sets: EnvRegistry.register_env_set("mine", builder) with a user gym.Env
(deterministic: state += action - 1 for Discrete(3), obs = [state, 2*state] float64 Box,
reward = state^2 as float64, terminated when |state| >= 3, truncated via max_episode_steps=5,
kwargs forwarded: start=), used over (b, t) with num_envs=None and with num_envs=2, actions
from a table: obs (float64 Box -> observation_dtype), reward float32, terminated/truncated
and the absorbing end vs a python replay of the same env."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, gymnasium as gym
from common import grab

B_, T_ = 2, 7


class Walk(gym.Env):
    def __init__(self, start=0):
        self.observation_space = gym.spaces.Box(-10, 10, (2,), np.float64)
        self.action_space = gym.spaces.Discrete(3)
        self.start = start
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.s = float(self.start + self.np_random.integers(0, 2))
        return np.array([self.s, 2 * self.s]), {}
    def step(self, a):
        self.s += int(a) - 1
        return np.array([self.s, 2 * self.s]), self.s ** 2, abs(self.s) >= 3, False, {}


def replay(s0, acts, max_steps=5):
    s, obs, rew, te, tr = s0, [], [], [], []
    done = False
    for k, a in enumerate(acts):
        if done:
            obs.append(obs[-1]); rew.append(0.0); te.append(te[-1]); tr.append(tr[-1]); continue
        s += int(a) - 1
        t_ = abs(s) >= 3; u = (k + 1) >= max_steps and not t_
        obs.append([s, 2 * s]); rew.append(s ** 2); te.append(t_); tr.append(u); done = t_ or u
    return np.array(obs), np.array(rew, np.float32), np.array(te), np.array(tr)


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.rl.env.env import Env
    from tempo.api.rl.env.env_registry.env_registry import EnvRegistry
    import gymnasium as gym
    EnvRegistry.register_env_set("mine", lambda bctx: gym.wrappers.TimeLimit(Walk(**bctx.kwargs), bctx.max_episode_steps)
                                 if bctx.max_episode_steps else Walk(**bctx.kwargs))
    ACT = np.array([[2, 2, 2, 0, 1, 2, 2], [0, 1, 2, 0, 2, 1, 0]], np.int64)
    ACT2 = np.stack([ACT, ACT[::-1]], -1)          # (B, T, 2) for num_envs=2
    out = []
    for ne in (None, 2):
        s = {}
        ctx = TempoContext(cfg, dim_names=("b", "t"))
        (b, B), (t, T) = ctx.variables_and_bounds
        with ctx:
            env = Env.make_env("mine.walk", num_envs=ne, max_episode_steps=5, start=1)
            o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(b, t))
            o[b, 0] = env.reset(domain=(b,))
            a = RT.const(ACT if ne is None else ACT2).index(0, b).index(0, t).cast(env.action_dtype)
            o[b, t + 1], r, te, tr = env.step(a)
            for k, v in dict(o=o, r=r, te=te, tr=tr).items():
                v[0:B, 0:T].sink_udf(grab(s, k))
            s["dt"] = (str(env.observation_dtype), str(r.dtype))
        ctx.compile({B: B_, T: T_}).execute()
        tag = f"ne{ne}"
        out.append((tag + "_dtypes", np.array(s["dt"]), np.array(("double", "float")), 0))
        for bb in range(B_):
            for n in range(1 if ne is None else 2):
                sl = (bb,) if ne is None else (bb, slice(None), n)
                o0 = s["o"][bb, 0] if ne is None else s["o"][bb, 0, n]
                acts = ACT[bb] if ne is None else ACT2[bb, :, n]
                ob, rw, tm, tc = replay(float(o0[0]), acts)
                got_o = s["o"][bb, 1:] if ne is None else s["o"][bb, 1:, n]
                pick = (lambda x: x[bb]) if ne is None else (lambda x: x[bb, :, n])
                out += [(f"{tag}_obs{bb}{n}", got_o, ob[:-1], 1e-9), (f"{tag}_rew{bb}{n}", pick(s["r"]), rw, 1e-6),
                        (f"{tag}_term{bb}{n}", pick(s["te"]), tm, 0), (f"{tag}_trunc{bb}{n}", pick(s["tr"]), tc, 0)]
    return out


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        ok = a.shape == b_.shape and (np.array_equal(a, b_) if a.dtype.kind in "bU" else np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) <= r[3])
        print(r[0], "ok" if ok else ("BAD", a.shape, b_.shape, a.ravel()[:8], b_.ravel()[:8]))
