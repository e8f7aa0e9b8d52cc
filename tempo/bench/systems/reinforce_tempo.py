"""Tempo's REINFORCE systems of E7 (BENCHMARKS.md §7.8): an actor-only policy gradient on
the trivial env (envs as a spatial batch, iterations i, steps t) weighting log π(a_t|o_t)
by the Monte-Carlo return (every later reward of the episode) or by the n-step return
Σ_{k<n} γ^k r[t+k] (the next n rewards only), written with `tempo.api.rl` as a user would.

The gradient is the sum over the episode of per-step terms. With the n-step return each
term reads only n rewards ahead, so the compiler accumulates it inside the rollout loop,
n-1 steps late (`compiler/passes/accumulate.py`, shifted placement in
`schedule/loop_tree.py`): a step's activations die n steps after it and the device peak is
O(n) steps. The Monte-Carlo return reads to the end of the episode, so its learner keeps all
T steps' observations: batched when its batched ops fit the cap, else summed in a loop of
its own after the rollout; either way, once the device nears the cap the swap moves
observations to the host pool (TD(n) stays far below it and swaps nothing).
`enable_incrementalization=False` turns the accumulation off.

Memory is Tempo's own accountant under the point's cap with swapping on (tempo_memory);
the iteration time is execute()'s wall time over the iterations."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tempo.api import RecurrentTensor, TempoContext, rl
from tempo.api.optim.optim import Adam
from tempo.api.rl.env.env import Env
from tempo.api.rl.networks.model_builder import ModelBuilder
from tempo.bench.clock import cpu_seconds
from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.systems.tempo_memory import memory_config, report_memory
from tempo.bench.timing import StatsLogger
from tempo.core.configs import ExecutionConfig

DEFAULTS: dict[str, Any] = dict(num_layers=2, params_per_layer=64, gamma=0.99, lr=1e-3,
                                seed=0, iterations=4, backend="torch")


def horizon(objective: str) -> int | None:
    """n of an `<n>_temporal_difference` objective; None for `monte_carlo`."""
    if objective == "monte_carlo":
        return None
    n, _, rest = objective.partition("_")
    if rest != "temporal_difference" or not n.isdigit():
        raise ValueError(f"unknown E7 objective {objective!r}")
    return int(n)


def _program(c: dict[str, Any], logger: StatsLogger, memory: dict[str, Any]) -> tuple[Any, dict]:
    cfg = ExecutionConfig(dev="cpu", backend=c["backend"], path="", seed=c["seed"], **memory)
    ctx = TempoContext(cfg, num_dims=2)
    (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        env = Env.make_env("trivial.trivial", num_envs=c["num_envs"],
                           max_episode_steps=c["ep_len"],
                           observation_shape=tuple(c["obs_shape"]), continuous=True)
        net = ModelBuilder.from_env(hidden=[c["params_per_layer"]] * c["num_layers"],
                                    domain=(i,), env=env, actor_critic=False)
        o = RecurrentTensor.placeholder(env.observation_shape, env.observation_dtype,
                                        domain=(i, t))
        o[i, 0] = env.reset(domain=(i,))
        action, _ = net(o)
        o[i, t + 1], r, _, _ = env.step(action)
        n = horizon(c["objective"])
        g = rl.n_step_returns(r, t, T, n=c["ep_len"] if n is None else n,
                              gamma=c["gamma"]).detach()
        loss = (-(net.log_prob(action) * g))[i, 0:T].mean()
        loss.backward()
        Adam(net.parameters, net.buffers, c["lr"]).step()
        RecurrentTensor.sink_many_with_ts_udf(
            [r[i, 0:T], loss],
            lambda xs, ts: logger.log({
                "iteration": ts[i], "loss": float(np.asarray(xs[1])),
                "mean_episode_return": float(np.asarray(xs[0]).sum(0).mean())}))
    return ctx, {I: c["iterations"], T: c["ep_len"]}


def train_tempo(cfg: dict[str, Any], acct: DeviceMemoryAccountant,
                logger: StatsLogger) -> dict[str, Any]:
    """`tempo-torch` system of E7 (`backend` in the point's config selects another)."""
    c = dict(DEFAULTS)
    c.update({k: v for k, v in cfg.items() if v is not None})
    ctx, bounds = _program(c, logger, memory_config(acct))
    w0, c0 = time.perf_counter(), cpu_seconds()
    exe = ctx.compile(bounds)
    compile_s, compile_cpu = time.perf_counter() - w0, cpu_seconds() - c0
    w0 = time.perf_counter()
    exe.execute()
    run_s = time.perf_counter() - w0
    return {"compile_s": compile_s, "compile_cpu_s": compile_cpu,
            "iter_mean": run_s / c["iterations"], "execute_s": run_s,
            **report_memory(exe, acct)}
