"""DQN with a replay buffer and a target network.

    python -m examples.rl.dqn --env gym.CartPole-v1 --iterations 100

Each iteration i acts ε-greedily for T steps, inserts every transition into the replay
buffer, then samples a batch ordered after those insertions (`token[i, 0:T]`) and takes one
Adam step on the TD error against the target network, a copy of the q-network refreshed
every `--target-every` iterations (`copy_every`). (One step per env step — parameters over
(i, t) — is the textbook form; its schedule currently takes minutes to compute, see the
issue notes.)"""

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
from examples.rl.ppo import env_kwargs
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.optim.optim import Adam
from tempo.api.rl.env.env import Env
from tempo.api.rl.networks.model_builder import ModelBuilder
from tempo.api.rl.replay_buffer.replay_buffer import ReplayBuffer
from tempo.core.dtype import dtypes


def parser() -> argparse.ArgumentParser:
    p = base_parser(__doc__.splitlines()[0], "gym.CartPole-v1", 100, 50, 4)
    p.set_defaults(lr=1e-3)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--buffer-size", type=int, default=20_000)
    p.add_argument("--target-every", type=int, default=4, help="iterations between copies")
    p.add_argument("--eps-end", type=float, default=0.05)
    p.add_argument("--explore-fraction", type=float, default=0.5,
                   help="fraction of all steps over which ε decays linearly from 1")
    p.add_argument("--env-kwargs", default="", help="as in examples.rl.ppo")
    return p


def build(a: argparse.Namespace) -> Program:
    kw = env_kwargs(a.env_kwargs)
    ctx = TempoContext(exec_config(a.backend, a.seed), num_dims=2)
    (i, I), (t, T) = ctx.variables_and_bounds
    log = TrainLog(f"DQN {a.env}", a.iterations, a.quiet)
    N = a.num_envs
    with ctx:
        env = Env.make_env(a.env, num_envs=N, **kw)
        if not env.is_discrete:
            raise SystemExit("DQN needs a discrete action space")
        n_act = int(env.action_space.n)  # type: ignore[attr-defined]
        obs_shape = env.single_observation_shape
        qnet = (ModelBuilder(domain=(i,)).with_ff_encoder(obs_shape, a.hidden[0])
                .with_ff_hidden(a.hidden[1:]).with_qfun_decoder(n_act).build())
        target = qnet.copy_every(a.target_every, var=i)

        o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(i, t))
        o[i, 0] = env.reset(domain=(i,))
        greedy, _ = qnet(o)
        # ε per iteration (an index expression i*T+t would not be affine for the scheduler)
        decay = max(1.0, a.explore_fraction * a.iterations)
        eps = (1.0 - RT.from_symbol(i).cast(dtypes.float32) / decay).maximum(a.eps_end)
        rand_a = (RT.random((N,), domain=(i, t)) * float(n_act)).floor().cast(
            dtypes.int64).minimum(n_act - 1)
        explore = RT.random((N,), domain=(i, t)) < eps
        action = RT.where(explore, rand_a, greedy.cast(dtypes.int64))
        o[i, t + 1], r, term, trunc = env.step(action)
        done = (term | trunc).cast(dtypes.float32)
        alive = RT.placeholder(r.shape, dtypes.float32, domain=(i, t))
        alive[t.symb_eq(0)] = RT.ones(r.shape)
        alive[True] = 1.0 - done[i, t - 1]

        buf = ReplayBuffer.make(a.buffer_size, [obs_shape, (), (), obs_shape, ()],
                                [env.observation_dtype, dtypes.int64, dtypes.float32,
                                 env.observation_dtype, dtypes.float32])
        # one insert per env: the (N, ...) batch goes in row by row through a spatial loop
        tokens = [buf.insert((o.index(0, k), action.index(0, k), r.index(0, k),
                              o[i, t + 1].index(0, k), term.cast(dtypes.float32).index(0, k)),
                             domain=(i, t)) for k in range(N)]
        token = tokens[0]
        for tk in tokens[1:]:
            token = token & tk
        ob, ab, rb, o2b, db = buf.sample((i,), token=token[i, 0:T], num_samples=a.batch_size)
        target(o2b)
        best_next = target.qvalues().max(-1)[0]  # (values, indices)
        y = (rb + a.gamma * (1.0 - db) * best_next).detach()
        qnet(ob)
        q_a = qnet.qvalues().gather(-1, ab.unsqueeze(-1)).squeeze(-1)
        loss = ((q_a - y) ** 2).mean()
        loss.backward()
        Adam(qnet.parameters, qnet.buffers, a.lr).step()
        RT.sink_many_with_ts_udf(
            [(r * alive)[i, 0:T], loss],
            lambda xs, ts: log.log(ts[i], mean_return=np.asarray(xs[0]).sum(0).mean(),
                                   loss=xs[1]))
    bounds: dict[Any, int] = {I: a.iterations, T: a.ep_len}
    return Program(ctx, bounds, log)


def main(argv: list[str] | None = None) -> None:
    a = parser().parse_args(argv)
    log = run(build(a))
    csv_path, png_path = log.write(a.out, f"dqn_{env_slug(a.env)}")
    print(summary(log))
    print(f"wrote {csv_path} and {png_path}")


if __name__ == "__main__":
    main()
