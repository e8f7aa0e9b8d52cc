"""The trivial env's step as Tempo ops (`Env.step` on `trivial.*`), not a UDF.

The env runner steps a gymnasium vector env through a UDF: a kernel call and a
backend -> numpy -> backend round trip per step, and a wall the fusion pass and compiled
loops cannot see through. The trivial env's dynamics are three elementwise ops, so its step
is recorded as ops on a recurrent state `s` over the step's domain: `s[.., 0]` is the
reset's state (the reset stays the runner's seeded UDF, so the episode starts are the
gymnasium-style vector env's), `s[.., t+1]` the stepped state. The values are those of
`TrivialEnv` (numpy, float32) under the runner's episode rules: at step t (0-based) the env
has taken t+1 steps; terminated = truncated = (t+1 >= max_episode_steps); from the step
after the end on, the episode is absorbing (the last observation, reward 0, flags held).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tempo.api.recurrent_tensor import RecurrentTensor
from tempo.api.rl.env.trivial_env import STEP_SIZE
from tempo.core import index_expr as ie
from tempo.core.domain import Domain
from tempo.core.dtype import dtypes
from tempo.core.errors import DomainError, user_site

if TYPE_CHECKING:
    from tempo.api.rl.env.env import Env
    from tempo.api.rl.env.env_runner import Runner

Steps = tuple[RecurrentTensor, RecurrentTensor, RecurrentTensor, RecurrentTensor]


def applies(env: Env) -> bool:
    """The trivial set without user wrappers (a wrapper may change what a step does)."""
    return env.build_ctx.env_set == "trivial" and not env.build_ctx.wrappers


def step_dim(runner: Runner, dom: Domain) -> ie.Symbol:
    """The one dim of the step's domain the episode runs along (t of `(b, i, t)` after a
    reset over `(b, i)`)."""
    extra = [v for v in dom.variables if v not in runner.vars]
    if len(extra) != 1:
        raise DomainError(
            f"{runner.name}.step over {list(map(str, dom.variables))} after a reset over "
            f"{list(map(str, runner.vars))}: the step's domain must add exactly one dim (the "
            "one the episode steps along) to the reset's", site=user_site())
    return extra[0]


def step(env: Env, runner: Runner, actions: RecurrentTensor, dom: Domain) -> Steps:
    """(obs, reward float32, terminated, truncated) of `env.step(actions)` as Tempo ops."""
    t = step_dim(runner, dom)
    lead = env._lead()
    obs_shape = env.single_observation_shape
    limit = int(env.build_ctx.max_episode_steps or 64)
    start = runner.reset_value
    assert start is not None  # Env.reset recorded it with the runner
    first = start.reshape((*lead, math.prod(obs_shape))).index(len(lead), 0)
    s = RecurrentTensor.placeholder(lead, dtypes.float32, domain=dom)
    s[tuple(0 if v.struct_eq(t) else v for v in dom.variables)] = first
    # the action's first element (its only one for the trivial action spaces: one reshape)
    first_a = actions.reshape(lead) if math.prod(actions.shape[len(lead):]) == 1 \
        else actions.reshape((*lead, -1)).index(len(lead), 0)
    a = first_a.cast(dtypes.float32)
    delta = a.clip(-1.0, 1.0) if bool(env.build_ctx.kwargs.get("continuous", True)) \
        else a * 2.0 - 1.0
    moved = (s + delta * STEP_SIZE).clip(-1.0, 1.0)
    # absorbing past the end: the state holds and the reward is 0 (`where`s on t, which
    # fuse with the step's ops; a placeholder's branches would split the region)
    live = RecurrentTensor.from_expr(t) < limit
    nxt = live.where(moved, s)
    s[tuple(t + 1 if v.struct_eq(t) else v for v in dom.variables)] = nxt
    reward = live.where(-moved.abs(), RecurrentTensor.zeros(lead, dtypes.float32))
    ended = RecurrentTensor.from_expr(t) >= limit - 1
    done = RecurrentTensor.placeholder(lead, dtypes.bool_, domain=dom)  # over the whole step
    done[True] = ended.expand(lead) if lead else ended
    # the observation is s broadcast to obs_shape and materialised, as TrivialEnv's is (a
    # real env's observation costs memory and bandwidth, BENCHMARKS §6): a stride-0 view
    # would make a stored observation free and the memory experiments (E6, E7) vacuous.
    # x * 1 is x bit for bit.
    ones = (1,) * len(obs_shape)
    obs = nxt.reshape((*lead, *ones)) * RecurrentTensor.ones(obs_shape, dtypes.float32) \
        if obs_shape else nxt
    return obs, reward, done, done

