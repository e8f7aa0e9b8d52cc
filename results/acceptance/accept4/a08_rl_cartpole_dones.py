"""§6.4 Env over (b, t): CartPole with an obs-dependent (bad) policy so episodes end inside the
rollout; per step obs / reward / terminated vs gymnasium's CartPole stepped from the same
initial state with the same actions, with the documented absorbing episode semantics (after
the end: same obs, reward 0, sticky flags); the masked return = steps survived. Then
Pendulum with num_envs=3 per point (vector env shapes) vs gymnasium physics."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, gymnasium as gym
from common import grab

B_, T_ = 3, 14

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.rl.env.env import Env
    from tempo.core.dtype import dtypes
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        env = Env.make_env("gym.CartPole-v1")
        obs = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(b, t))
        obs[b, 0] = env.reset(domain=(b,))
        act = (obs[t, 2] * -1.0 > 0.0).cast(env.action_dtype) if False else (obs.index(0, 2) < 0.0).cast(env.action_dtype)
        obs[b, t + 1], rew, term, trunc = env.step(act)
        obs[0:B, 0:T].sink_udf(grab(s, "obs"))
        act[0:B, 0:T].sink_udf(grab(s, "act"))
        rew[0:B, 0:T].sink_udf(grab(s, "rew"))
        term[0:B, 0:T].sink_udf(grab(s, "term"))
        ret = rew[b, 0:T].sum(0)
        ret[0:B].sink_udf(grab(s, "ret"))
        # vector env per point: Pendulum with num_envs=3
        penv = Env.make_env("gym.Pendulum-v1", num_envs=3)
        pobs = RT.placeholder(penv.observation_shape, penv.observation_dtype, domain=(b, t))
        pobs[b, 0] = penv.reset(domain=(b,))
        pact = (pobs.index(1, 1) * -2.0).unsqueeze(1).clip(-2.0, 2.0).cast(penv.action_dtype)
        pobs[b, t + 1], prew, _, _ = penv.step(pact)
        pobs[0:B, 0:T].sink_udf(grab(s, "pobs"))
        prew[0:B, 0:T].sink_udf(grab(s, "prew"))
        shapes = (tuple(penv.observation_shape), tuple(penv.action_shape))
    ctx.compile({B: B_, T: T_}).execute()
    O, A = s["obs"], s["act"]
    ref_obs = np.zeros_like(O); ref_rew = np.zeros((B_, T_), np.float32); ref_term = np.zeros((B_, T_), bool)
    for k in range(B_):
        e = gym.make("CartPole-v1").unwrapped
        e.reset(seed=0)
        e.state = O[k, 0].astype(np.float64)
        ref_obs[k, 0] = O[k, 0]
        done = False
        for q in range(T_):
            if q > 0:
                ref_obs[k, q] = nobs  # after the end nobs stays the terminal obs (absorbing)
            a = int(ref_obs[k, q, 2] < 0)
            if done:
                ref_rew[k, q], ref_term[k, q] = 0.0, True
                continue
            nobs, r, te, _, _ = e.step(a)
            ref_rew[k, q], ref_term[k, q] = r, te
            done = te
        # obs[t+1] after the last step is not in the window
    res = [("act_policy", A, (O[:, :, 2] < 0).astype(A.dtype), 0),
           ("obs", O, ref_obs, 1e-4), ("rew", s["rew"], ref_rew, 0), ("term", s["term"], ref_term, 0),
           ("ret", s["ret"], ref_rew.sum(1), 0), ("episodes_end", np.array(ref_term[:, -1].all()), np.array(True), 0)]
    PO = s["pobs"]
    ref_p = np.zeros_like(PO); ref_pr = np.zeros((B_, T_, 3), np.float32)
    for k in range(B_):
        for j in range(3):
            e = gym.make("Pendulum-v1").unwrapped
            e.reset(seed=0)
            th = np.arctan2(PO[k, 0, j, 1], PO[k, 0, j, 0]); e.state = np.array([th, PO[k, 0, j, 2]])
            ref_p[k, 0, j] = PO[k, 0, j]
            for q in range(T_):
                u = np.clip(ref_p[k, q, j, 1] * -2.0, -2, 2)
                o2, r, _, _, _ = e.step(np.array([u], np.float32))
                ref_pr[k, q, j] = r
                if q + 1 < T_:
                    ref_p[k, q + 1, j] = o2
    res += [("pobs", PO, ref_p, 1e-3), ("prew", s["prew"], ref_pr, 1e-3),
            ("pend_shapes", np.array(shapes, dtype=object).astype(str), np.array([(3, 3), (3, 1)], dtype=object).astype(str), 0),
            ("pend_distinct_envs", np.array(len(np.unique(PO[:, 0, :, 2].round(5))) == B_ * 3), np.array(True), 0)]
    return res

if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    np.set_printoptions(precision=4, suppress=True, linewidth=150)
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        if r[0] in ("obs", "term", "rew"):
            print(r[0]); print(r[1][0]); print(r[2][0])
