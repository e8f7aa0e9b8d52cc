"""PPO (clipped surrogate, GAE, value and entropy terms) as one Tempo program over
iterations i and steps t: the rollout, the advantages computed backwards in time, the loss
and the Adam update are all recorded once and compiled.

    python -m examples.rl.ppo --env gym.CartPole-v1 --iterations 150
    python -m examples.rl.ppo --env gym.Pendulum-v1 --iterations 50     # continuous
    python -m examples.rl.ppo --env trivial.trivial --symbolic-batch    # envs on a dim b

Episodes longer than the rollout are cut at T; after an env terminates, its steps are
masked out of the loss (and its value counts as 0 in GAE)."""

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
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext, rl
from tempo.api.optim.optim import Adam
from tempo.api.rl.env.env import Env
from tempo.api.rl.networks.model_builder import ModelBuilder
from tempo.api.rl.networks.network import Network
from tempo.core.dtype import dtypes


def parser() -> argparse.ArgumentParser:
    p = base_parser(__doc__.splitlines()[0], "gym.CartPole-v1", 60, 200, 16)
    p.add_argument("--lam", type=float, default=0.95, help="GAE lambda")
    p.add_argument("--clip", type=float, default=0.2)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--shared", action="store_true",
                   help="one trunk for actor and critic (ModelBuilder.from_env(actor_critic=True))"
                   "; default: separate actor and critic networks, as CleanRL")
    p.add_argument("--env-kwargs", default="", help="k=v,k=v (ints/floats parsed), e.g. "
                   "observation_shape=3x4x4 for trivial.trivial")
    return p


def env_kwargs(spec: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in filter(None, spec.split(",")):
        k, _, v = kv.partition("=")
        if "x" in v and all(p.isdigit() for p in v.split("x")):
            out[k] = tuple(int(p) for p in v.split("x"))
        elif v in ("True", "False"):
            out[k] = v == "True"
        else:
            try:
                out[k] = int(v)
            except ValueError:
                out[k] = float(v)
    return out


def build(a: argparse.Namespace) -> Program:
    """Record the PPO program; `a` holds parser()'s options."""
    kw = env_kwargs(a.env_kwargs)
    if a.env.startswith("trivial.") and "observation_shape" not in kw:
        kw["observation_shape"] = (3, 4, 4)
    sym = a.symbolic_batch
    ctx = TempoContext(exec_config(a.backend, a.seed), num_dims=3 if sym else 2)
    if sym:
        (b, B), (i, I), (t, T) = ctx.variables_and_bounds
        dom: tuple[Any, ...] = (b, i, t)
    else:
        (i, I), (t, T) = ctx.variables_and_bounds
        dom = (i, t)
    log = TrainLog(f"PPO {a.env}", a.iterations, a.quiet)

    def at_t(x: RT, tt: Any) -> RT:
        return x[tuple(tt if v is t else v for v in dom)]

    def rollout(x: RT) -> RT:  # every sample of iteration i
        return x[0:B, i, 0:T] if sym else x[i, 0:T]

    with ctx:
        env = Env.make_env(a.env, num_envs=None if sym else a.num_envs,
                           max_episode_steps=kw.pop("max_episode_steps", None), **kw)
        net, critic = actor_critic(a, env, i)
        params = net.parameters + (critic.parameters if critic is not None else [])
        opt = Adam(params, [], a.lr)
        o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=dom)
        o[dom[:-1] + (0,)] = env.reset(domain=dom[:-1])
        batch = o.unsqueeze() if sym else o
        action, value = net(batch)
        if critic is not None:
            value, _ = critic(batch)
        assert value is not None  # an actor-critic
        if sym:
            value = value.squeeze(0)
        o[dom[:-1] + (t + 1,)], r, term, trunc = env.step(action)

        done = (term | trunc).cast(dtypes.float32)
        alive = RT.placeholder(r.shape, dtypes.float32, domain=dom)
        alive[t.symb_eq(0)] = RT.ones(r.shape)
        alive[True] = 1.0 - at_t(done, t - 1)
        v_old = value.detach() * alive  # a finished env's value is 0
        adv = rl.gae(r, v_old, t, T, a.gamma, a.lam)
        ret = adv + v_old
        n_alive = rollout(alive).sum()
        adv_mean = rollout(adv * alive).sum() / n_alive
        adv_std = ((rollout((adv - adv_mean) ** 2 * alive).sum()) / n_alive).sqrt()
        adv = adv.normalize(adv_mean, adv_std)

        logp = net.log_prob(action)
        entropy = net.entropy()
        if sym:
            logp, entropy = logp.squeeze(0), entropy.squeeze(0)
        ratio = (logp - logp.detach()).exp()
        pg = -RT.minimum(ratio * adv, ratio.clip(1.0 - a.clip, 1.0 + a.clip) * adv)
        per_sample = (pg + a.vf_coef * (value - ret.detach()) ** 2 - a.ent_coef * entropy)
        loss = rollout(per_sample * alive).sum() / n_alive
        loss.backward()
        opt.step()

        returns = rollout(r)
        steps = rollout(alive)
        env_axis = 0 if sym else 1
        RT.sink_many_with_ts_udf(
            [returns, steps, loss],
            lambda xs, ts: log.log(ts[i], mean_return=np.asarray(xs[0]).sum(1 - env_axis).mean(),
                                   mean_ep_len=np.asarray(xs[1]).sum(1 - env_axis).mean(),
                                   loss=xs[2]))
    bounds = {I: a.iterations, T: a.ep_len}
    if sym:
        bounds[B] = a.num_envs
    return Program(ctx, bounds, log)


def actor_critic(a: argparse.Namespace, env: Env, i: Any) -> tuple[Network, Network | None]:
    """The policy (with its own value head if `--shared`) and a separate critic or None."""
    if a.shared:
        return ModelBuilder.from_env(hidden=a.hidden, domain=(i,), env=env,
                                     actor_critic=True), None

    def trunk() -> ModelBuilder:
        b = ModelBuilder(domain=(i,)).with_ff_encoder(env.single_observation_shape,
                                                      a.hidden[0])
        return b.with_ff_hidden(a.hidden[1:])

    pi = trunk()
    if env.is_discrete:
        pi = pi.with_discrete_pi_decoder(int(env.action_space.n))  # type: ignore[attr-defined]
    else:
        pi = pi.with_continuous_pi_decoder(env.single_action_shape)
    return pi.with_no_second_decoder().build(), trunk().with_vfun_decoder_only().build()


def main(argv: list[str] | None = None) -> None:
    a = parser().parse_args(argv)
    log = run(build(a))
    csv_path, png_path = log.write(a.out, f"ppo_{env_slug(a.env)}")
    print(summary(log))
    print(f"wrote {csv_path} and {png_path}")


if __name__ == "__main__":
    main()
