"""REINFORCE with a Monte-Carlo or an n-step TD objective (the E7 programs).

    python -m examples.rl.reinforce --env gym.CartPole-v1 --objective mc
    python -m examples.rl.reinforce --env gym.CartPole-v1 --objective td --n 8

MC weights log π(a_t|o_t) by the discounted return of the rest of the episode (normalised),
which needs every reward of the episode. TD(n) weights it by the n-step TD residual with a
learned critic, which needs only the next n rewards: `rl.n_step_td_residual` reads the window
r[t:t+n] (O(n) memory once the schedule frees the rest)."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from examples.rl.common import (
    Program,
    TrainLog,
    base_parser,
    env_slug,
    exec_config,
    run,
    summary,
)
from examples.rl.ppo import actor_critic, env_kwargs
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext, rl
from tempo.api.optim.optim import Adam
from tempo.api.rl.env.env import Env
from tempo.core.dtype import dtypes


def parser() -> argparse.ArgumentParser:
    p = base_parser(__doc__.splitlines()[0], "gym.CartPole-v1", 60, 200, 16)
    p.add_argument("--objective", choices=["mc", "td"], default="mc")
    p.add_argument("--n", type=int, default=8, help="TD horizon (objective td)")
    p.add_argument("--env-kwargs", default="", help="as in examples.rl.ppo")
    return p


def build(a: argparse.Namespace) -> Program:
    kw = env_kwargs(a.env_kwargs)
    if a.env.startswith("trivial.") and "observation_shape" not in kw:
        kw["observation_shape"] = (3, 4, 4)
    ctx = TempoContext(exec_config(a.backend, a.seed), num_dims=2)
    (i, I), (t, T) = ctx.variables_and_bounds
    log = TrainLog(f"REINFORCE-{a.objective} {a.env}", a.iterations, a.quiet)
    with ctx:
        env = Env.make_env(a.env, num_envs=a.num_envs, **kw)
        a.shared = False
        net, critic = actor_critic(a, env, i)
        assert critic is not None
        o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(i, t))
        o[i, 0] = env.reset(domain=(i,))
        action, _ = net(o)
        o[i, t + 1], r, term, trunc = env.step(action)
        done = (term | trunc).cast(dtypes.float32)
        alive = RT.placeholder(r.shape, dtypes.float32, domain=(i, t))
        alive[t.symb_eq(0)] = RT.ones(r.shape)
        alive[True] = 1.0 - done[i, t - 1]
        logp = net.log_prob(action)
        n_alive = alive[i, 0:T].sum()
        if a.objective == "mc":
            g = rl.n_step_returns(r, t, T, n=a.ep_len, gamma=a.gamma).detach()
            mean = (g * alive)[i, 0:T].sum() / n_alive
            std = (((g - mean) ** 2 * alive)[i, 0:T].sum() / n_alive).sqrt()
            weight = g.normalize(mean, std)
            loss = (-(logp * weight) * alive)[i, 0:T].sum() / n_alive
            params = net.parameters
        else:
            value, _ = critic(o)
            v = value.detach() * alive
            weight = rl.n_step_td_residual(r, v, t, T, a.n, a.gamma)
            target = rl.bootstrapped_n_step_returns(r, v, t, T, a.n, a.gamma)
            per = -(logp * weight) + 0.5 * (value - target) ** 2
            loss = (per * alive)[i, 0:T].sum() / n_alive
            params = net.parameters + critic.parameters
        loss.backward()
        Adam(params, [], a.lr).step()
        RT.sink_many_with_ts_udf(
            [r[i, 0:T], loss],
            lambda xs, ts: log.log(ts[i], mean_return=np.asarray(xs[0]).sum(0).mean(),
                                   loss=xs[1]))
    bounds: dict[Any, int] = {I: a.iterations, T: a.ep_len}
    return Program(ctx, bounds, log)


def main(argv: list[str] | None = None) -> None:
    a = parser().parse_args(argv)
    log = run(build(a))
    csv_path, png_path = log.write(a.out, f"reinforce_{a.objective}_{env_slug(a.env)}")
    print(summary(log))
    print(f"wrote {csv_path} and {png_path}")


if __name__ == "__main__":
    main()
