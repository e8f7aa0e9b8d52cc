"""DQN with a replay buffer and a target network, one gradient step per environment step.

    python -m examples.rl.dqn --env gym.CartPole-v1 --iterations 30

The q-network's parameters evolve over (i, t): every step t of iteration i acts
ε-greedily, inserts its transitions into the replay buffer, samples a batch ordered after
that insertion (`token[i, t]`) and takes one Adam step on the TD error against the target
network, the q-network at the start of every `--target-every`-th iteration (`copy_every`).
(One update per iteration instead gives 30x fewer updates; eager torch with the same
hyper-parameters then collapses to the always-one-action policy, return ~9, too.)"""

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
    p = base_parser(__doc__.splitlines()[0], "gym.CartPole-v1", 30, 50, 4)
    p.set_defaults(lr=1e-3)
    p.add_argument("--batch-size", type=int, default=64)
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
        qnet = (ModelBuilder(domain=(i, t)).with_ff_encoder(obs_shape, a.hidden[0])
                .with_ff_hidden(a.hidden[1:]).with_qfun_decoder(n_act).build())
        target = qnet.copy_every(a.target_every, var=i)

        o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(i, t))
        o[i, 0] = env.reset(domain=(i,))
        greedy, _ = qnet(o)
        # ε by progress i + t/T (the step count i*T + t is not affine in the bound T)
        progress = (RT.from_symbol(i).cast(dtypes.float32)
                    + RT.from_symbol(t).cast(dtypes.float32) / float(a.ep_len))
        decay = max(1.0, a.explore_fraction * a.iterations)
        eps = (1.0 - progress / decay).maximum(a.eps_end)
        rand_a = (RT.random((N,), domain=(i, t)) * float(n_act)).floor().cast(
            dtypes.int64).minimum(n_act - 1)
        explore = RT.random((N,), domain=(i, t)) < eps
        action = RT.where(explore, rand_a, greedy.cast(dtypes.int64))
        # the transition stores the step's own output: a read of o[i, t+1] at step t
        # would put the whole placeholder o inside the per-step update cycle
        o_next, r, term, trunc = env.step(action)
        o[i, t + 1] = o_next
        done = (term | trunc).cast(dtypes.float32)
        alive = RT.placeholder(r.shape, dtypes.float32, domain=(i, t))
        alive[t.symb_eq(0)] = RT.ones(r.shape)
        alive[True] = 1.0 - done[i, t - 1]

        buf = ReplayBuffer.make(a.buffer_size, [obs_shape, (), (), obs_shape, ()],
                                [env.observation_dtype, dtypes.int64, dtypes.float32,
                                 env.observation_dtype, dtypes.float32])
        # one insert per env: the (N, ...) batch goes in row by row through a spatial loop
        tokens = [buf.insert((o.index(0, k), action.index(0, k), r.index(0, k),
                              o_next.index(0, k), term.cast(dtypes.float32).index(0, k)),
                             domain=(i, t)) for k in range(N)]
        token = tokens[0]
        for tk in tokens[1:]:
            token = token & tk
        ob, ab, rb, o2b, db = buf.sample((i, t), token=token, num_samples=a.batch_size)
        target(o2b)
        best_next = target.qvalues().max(-1)[0]  # (values, indices)
        y = (rb + a.gamma * (1.0 - db) * best_next).detach()
        qnet(ob)
        q_a = qnet.qvalues().gather(-1, ab.unsqueeze(-1)).squeeze(-1)
        loss = ((q_a - y) ** 2).mean()
        loss.backward()
        Adam(qnet.parameters, qnet.buffers, a.lr).step()
        RT.sink_many_with_ts_udf(
            [(r * alive)[i, 0:T], loss[i, 0:T]],
            lambda xs, ts: log.log(ts[i], mean_return=np.asarray(xs[0]).sum(0).mean(),
                                   loss=np.asarray(xs[1]).mean()))
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
