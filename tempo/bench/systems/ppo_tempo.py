"""Tempo's PPO system of E5/E6 (BENCHMARKS.md §7.6): the artifact's program structure on the
trivial env — envs on a symbolic dim b, iterations i, steps t — with the CleanRL baseline's
hyper-parameters (same network sizes, GAE γ/λ, clip, coefficients, Adam lr).
Memory is Tempo's own accountant, under the point's cap with swapping on (tempo_memory).

Compile time (wall and CPU of this process) is returned with the results; the iteration
time is a second execute()'s wall time over the iterations: the first run is the warm-up
that absorbs jax's compilations (BENCHMARKS §1.5 drops iteration 0 for every system; the
logging sink's timestamps cannot time Tempo's iterations, since nothing orders the sink
before the next iteration and the schedule may run it later). Without a cap
(E5) the timed run is untracked — tracking keeps every value in a counted store and forms
no fused regions — and memory comes from a second, tracked run of two iterations, as
BENCHMARKS §4.5 runs timing and memory apart; under a cap (E6) one tracked run gives both."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tempo.api import RecurrentTensor, TempoContext, rl
from tempo.api.optim.optim import Adam
from tempo.api.rl.env.env import Env
from tempo.api.rl.networks.model_builder import ModelBuilder
from tempo.bench.baselines.ppo_cleanrl import DEFAULTS
from tempo.bench.clock import cpu_seconds
from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.systems.tempo_memory import memory_config, report_memory
from tempo.bench.timing import StatsLogger
from tempo.core.configs import ExecutionConfig


def _program(c: dict[str, Any], backend: str, logger: StatsLogger,
             memory: dict[str, Any]) -> tuple[Any, dict]:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend=backend, path="", seed=c["seed"],
                                       **memory), num_dims=3)
    (b, B), (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        env = Env.make_env("trivial.trivial", max_episode_steps=c["ep_len"],
                           observation_shape=tuple(c["obs_shape"]), continuous=True)
        net = ModelBuilder.from_env(hidden=[c["params_per_layer"]] * (c["num_layers"] + 1),
                                    domain=(i,), env=env, actor_critic=True)
        opt = Adam(net.parameters, net.buffers, c["lr"])
        o = RecurrentTensor.placeholder(env.observation_shape, env.observation_dtype,
                                        domain=(b, i, t))
        o[b, i, 0] = env.reset(domain=(b, i))
        action, value = net(o.unsqueeze())
        value = value.squeeze(0)
        o[b, i, t + 1], r, _, _ = env.step(action)
        adv = rl.gae(r, value.detach(), t, T, c["gamma"], c["gae_lambda"])
        ret = adv + value.detach()
        every = adv[0:B, i, 0:T]
        adv = adv.normalize(every.mean(), every.std())
        logp = net.log_prob(action).squeeze(0)
        ratio = (logp - logp.detach()).exp()
        clip = c["clip_coef"]
        pg = -RecurrentTensor.minimum(ratio * adv, ratio.clip(1 - clip, 1 + clip) * adv)
        per = pg + c["vf_coef"] * 0.5 * (value - ret.detach()) ** 2 \
            - c["ent_coef"] * net.entropy().squeeze(0)
        loss = per[0:B, i, 0:T].mean()
        loss.backward()
        opt.step()
        RecurrentTensor.sink_many_with_ts_udf(
            [r[0:B, i, 0:T], loss],
            lambda xs, ts: logger.log({
                "iteration": ts[i], "loss": float(np.asarray(xs[1])),
                "mean_episode_return": float(np.asarray(xs[0]).sum(1).mean())}))
    return ctx, {B: c["num_envs"], I: c["iterations"], T: c["ep_len"]}


def train(cfg: dict[str, Any], acct: DeviceMemoryAccountant, logger: StatsLogger,
          backend: str) -> dict[str, Any]:
    c = dict(DEFAULTS)
    c.update({k: v for k, v in cfg.items() if v is not None})
    capped = acct.cap_bytes is not None
    ctx, bounds = _program(c, backend, logger, memory_config(acct) if capped else {})
    w0, c0 = time.perf_counter(), cpu_seconds()
    exe = ctx.compile(bounds)
    compile_s, compile_cpu = time.perf_counter() - w0, cpu_seconds() - c0
    w0 = time.perf_counter()
    exe.execute()  # the warm-up run (jax compiles its kernels and regions here)
    first_s = time.perf_counter() - w0
    exe.reset()
    w0 = time.perf_counter()
    exe.execute()
    run_s = time.perf_counter() - w0
    out: dict[str, Any] = {"compile_s": compile_s, "compile_cpu_s": compile_cpu,
                           "first_execute_s": first_s, "execute_s": run_s,
                           "iter_mean": run_s / c["iterations"]}
    if not capped:  # the memory run: tracked, two iterations, its own logger
        c = dict(c, iterations=min(2, c["iterations"]))
        ctx, bounds = _program(c, backend, StatsLogger(), memory_config(acct))
        exe = ctx.compile(bounds)
        exe.execute()
    return {**out, **report_memory(exe, acct)}


def train_tempo_torch(cfg: dict[str, Any], acct: DeviceMemoryAccountant,
                      logger: StatsLogger) -> dict[str, Any]:
    """`tempo-torch` system of E5/E6."""
    return train(cfg, acct, logger, "torch")


def train_tempo_jax(cfg: dict[str, Any], acct: DeviceMemoryAccountant,
                    logger: StatsLogger) -> dict[str, Any]:
    """`tempo-jax` system of E5/E6."""
    return train(cfg, acct, logger, "jax")
