"""§6.4 the trivial env (runs as Tempo ops, not a gym step): Env.make_env("trivial.trivial",
num_envs=2, max_episode_steps=4, observation_shape=(2, 3)) over (b, t), T=6, with
continuous actions in and outside [-1, 1]: obs = state broadcast to (2, 3), reward -|s'|,
s' = clip(s + 0.05 clip(a, -1, 1), -1, 1) (BENCHMARKS.md §6), terminated/truncated at the
4th step then absorbing (obs held, reward 0, flags held) -- checked against a numpy replay
from the reset state; the discrete variant (continuous=False: action k -> 2k - 1); and
reset(seed=5) giving the same first observation in two compiles, seed=6 a different one."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

B_, T_ = 2, 6


def replay(s0, acts, disc):
    s = s0.copy(); obs, rew, te = [], [], []
    done = False
    for k in range(T_):
        if done:
            obs.append(obs[-1]); rew.append(np.zeros_like(s)); te.append(te[-1]); continue
        a = (2 * acts[k] - 1).astype(np.float64) if disc else np.clip(acts[k], -1, 1)
        s = np.clip(s + 0.05 * a, -1, 1)
        obs.append(s.copy()); rew.append(-np.abs(s)); d = (k + 1) >= 4
        te.append(np.full(s.shape, d)); done = d
    return np.array(obs), np.array(rew), np.array(te)


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.rl.env.env import Env
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(3)
    ACT = (rng.normal(size=(B_, T_, 2, 1)) * 1.5).astype(np.float32)
    DACT = rng.integers(0, 2, size=(B_, T_, 2)).astype(np.int64)
    out = []
    first = {}
    for disc in (False, True):
        for seed in ((5, 5, 6) if not disc else (5,)):
            s = {}
            ctx = TempoContext(cfg, dim_names=("b", "t"))
            (b, B), (t, T) = ctx.variables_and_bounds
            with ctx:
                env = Env.make_env("trivial.trivial", num_envs=2, max_episode_steps=4, observation_shape=(2, 3), continuous=not disc)
                o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(b, t))
                o[b, 0] = env.reset(seed=seed, domain=(b,))
                a = (RT.const(DACT).index(0, b).index(0, t) if disc else RT.const(ACT).index(0, b).index(0, t)).cast(env.action_dtype)
                if tuple(a.shape) != tuple(env.action_shape):
                    a = a.reshape(tuple(env.action_shape))
                o[b, t + 1], r, te, tr = env.step(a)
                for k, v in dict(o=o, r=r, te=te, tr=tr).items():
                    v[0:B, 0:T].sink_udf(grab(s, k))
            ctx.compile({B: B_, T: T_}).execute()
            first.setdefault((disc, seed), []).append(s["o"][:, 0])
            if seed == 5 and len(first[(disc, seed)]) == 1:
                tag = "disc" if disc else "cont"
                for bb in range(B_):
                    s0 = s["o"][bb, 0][:, 0, 0].astype(np.float64)           # per-env state
                    bcast = np.all(s["o"][bb, 0] == s["o"][bb, 0][:, :1, :1])
                    acts = DACT[bb] if disc else ACT[bb, :, :, 0]
                    ob, rw, tm = replay(s0, acts, disc)
                    out += [(f"{tag}_bcast{bb}", np.array(bcast), np.array(True), 0),
                            (f"{tag}_obs{bb}", s["o"][bb, 1:][:, :, 0, 0], ob[:-1].astype(np.float32), 1e-6),
                            (f"{tag}_rew{bb}", s["r"][bb].reshape(T_, -1)[:, :2] if s["r"][bb].ndim > 1 else s["r"][bb], rw.astype(np.float32), 1e-6),
                            (f"{tag}_term{bb}", s["te"][bb].reshape(T_, 2), tm, 0),
                            (f"{tag}_trunc{bb}", s["tr"][bb].reshape(T_, 2), tm, 0)]
    out += [("seed_repeat", first[(False, 5)][0], first[(False, 5)][1], 0),
            ("seed_differs", np.array(np.abs(first[(False, 5)][0] - first[(False, 6)][0]).max() > 1e-3), np.array(True), 0)]
    return out


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        ok = a.shape == b_.shape and (np.array_equal(a, b_) if a.dtype.kind in "b" else np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) <= r[3])
        print(r[0], a.shape, b_.shape, "ok" if ok else ("BAD", a.ravel()[:8], b_.ravel()[:8]))
