"""`Env`: gymnasium environments as UDF sources of a Tempo program (API.md §6.4).

`obs = env.reset(domain=(b, i))` starts an episode per point; `o2, r, term, trunc =
env.step(actions)` continues, per point of the actions' domain, the episode reset at that
point's values of the reset domain (so `o[b,i,t+1], r, term, trunc = env.step(a)` with
`o[b,i,0] = env.reset(domain=(b,i))`). Batching comes from the batch symbolic dim (each
point one env; a vectorised program steps a block of points as one vector env) or from
`num_envs` (each point a vector env, shapes led by `num_envs`). See `env_runner` for the
episode semantics (absorbing after the end, autoreset off)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from tempo.api.recurrent_tensor import RecurrentTensor
from tempo.api.rl.env import trivial_ops
from tempo.api.rl.env.env_registry.env_registry import EnvBuildCtx, EnvRegistry
from tempo.api.rl.env.env_runner import Runner
from tempo.api.rl.env.wrappers import TempoEnvWrapper
from tempo.api.tempo_context_manager import get_active_ctx_manager
from tempo.api.tensor_base import record1
from tempo.core import naming, ops
from tempo.core.domain import Domain, DomainLike
from tempo.core.dtype import DataType, dtypes
from tempo.core.errors import DomainError, DTypeError, ShapeError, TempoError, user_site
from tempo.core.shape import Shape


def _space_shape_dtype(space: gym.Space) -> tuple[tuple[int, ...], DataType]:
    if isinstance(space, gym.spaces.Discrete):
        return (), dtypes.default_int
    if isinstance(space, gym.spaces.Box | gym.spaces.MultiDiscrete | gym.spaces.MultiBinary):
        return tuple(int(d) for d in space.shape), dtypes.from_np(np.dtype(space.dtype))
    raise TempoError(f"gymnasium space {space} is not supported (Discrete, Box, MultiDiscrete "
                     "and MultiBinary are)", site=user_site())


@dataclass(frozen=True)
class Env:
    """A named environment and its spaces; `reset`/`step` record UDFs into the program."""

    name: str
    build_ctx: EnvBuildCtx
    num_envs: int | None
    observation_space: gym.Space
    action_space: gym.Space
    _runners: list[Runner] = field(default_factory=list, repr=False, compare=False)

    @staticmethod
    def make_env(name: str, num_envs: int | None = None, max_episode_steps: int | None = None,
                 wrappers: Sequence[type[TempoEnvWrapper]] | None = None, **kwargs: Any) -> Env:
        """`"<env_set>.<env_name>"`, e.g. `"gym.CartPole-v1"`, `"trivial.trivial"`."""
        env_set, env_name = EnvRegistry.split_name(name)
        if num_envs is not None and int(num_envs) < 1:
            raise TempoError(f"num_envs must be >= 1, got {num_envs}", site=user_site())
        bctx = EnvBuildCtx(env_set, env_name, max_episode_steps, tuple(wrappers or ()),
                           dict(kwargs))
        probe = EnvRegistry.build(bctx)
        try:
            obs_space, act_space = probe.observation_space, probe.action_space
        finally:
            probe.close()
        return Env(name, bctx, None if num_envs is None else int(num_envs), obs_space,
                   act_space)

    # ---------------------------------------------------------------- shapes
    def _lead(self) -> tuple[int, ...]:
        return () if self.num_envs is None else (self.num_envs,)

    @property
    def single_observation_shape(self) -> tuple[int, ...]:
        return _space_shape_dtype(self.observation_space)[0]

    @property
    def single_action_shape(self) -> tuple[int, ...]:
        return _space_shape_dtype(self.action_space)[0]

    @property
    def observation_shape(self) -> Shape:
        return Shape.from_((*self._lead(), *self.single_observation_shape))

    @property
    def observation_dtype(self) -> DataType:
        return _space_shape_dtype(self.observation_space)[1]

    @property
    def action_shape(self) -> Shape:
        return Shape.from_((*self._lead(), *self.single_action_shape))

    @property
    def action_dtype(self) -> DataType:
        return _space_shape_dtype(self.action_space)[1]

    @property
    def is_discrete(self) -> bool:
        return isinstance(self.action_space, gym.spaces.Discrete)

    # ---------------------------------------------------------------- program ops
    def _make_vector(self, n: int) -> gym.vector.VectorEnv:
        from dataclasses import replace

        return EnvRegistry.build_vector(replace(self.build_ctx, num_envs=n))

    def reset(self, seed: int | None = None, domain: DomainLike = None) -> RecurrentTensor:
        """The first observation of an episode at each point of `domain`."""
        ctx = get_active_ctx_manager()
        dom = Domain.from_(domain, none_is_empty=True)
        obs_dt = self.observation_dtype
        pack = np.float64 if obs_dt in (dtypes.float64, dtypes.int64) else np.float32
        runner = Runner(self.name, self._make_vector, dom.variables, self.num_envs,
                        ctx.execution_config.seed if seed is None else seed,
                        math.prod(self.single_observation_shape), np.dtype(pack),
                        self.single_action_shape)
        runner.obs_shape = self.single_observation_shape
        runner.steps_as_ops = trivial_ops.applies(self)
        self._runners.append(runner)
        obs = RecurrentTensor.source_with_ts_udf(
            runner.reset_point, tuple(self.observation_shape), obs_dt, domain=dom,
            lazy_vectorized_version=runner.reset_vectorized, name=f"{self.name}.reset")
        runner.reset_value = obs
        return obs

    def step(self, actions: Any, domain: DomainLike = None) -> tuple[
            RecurrentTensor, RecurrentTensor, RecurrentTensor, RecurrentTensor]:
        """(obs, reward float32, terminated bool, truncated bool) after `actions`."""
        a = RecurrentTensor.lift(actions)
        dom = a.domain if domain is None else Domain.from_(domain, none_is_empty=True)
        runner = self._runner_for(dom)
        a = self._checked_actions(a)
        if runner.steps_as_ops:
            return trivial_ops.step(self, runner, a, dom)
        n_obs = math.prod(self.single_observation_shape)
        lead = self._lead()
        pack_dt = dtypes.float64 if runner.pack_dtype == np.float64 else dtypes.float32
        # the step reads its episode's first observation (and ignores it): the reset must
        # run first and stays live when nothing else reads it (open-loop actions)
        packed = record1(ops.MapUDFOp, [a, runner.reset_value], domain=dom,
                         fn=runner.step_point,
                         shape=Shape.from_((*lead, n_obs + 3)), dtype=pack_dt, with_ts=True,
                         lazy_vectorized_version=runner.step_vectorized)
        d = len(lead)
        obs = packed.slice_dim(d, 0, n_obs).reshape(tuple(self.observation_shape))
        if obs.dtype != self.observation_dtype:
            obs = obs.cast(self.observation_dtype)
        reward = packed.index(d, n_obs)
        if reward.dtype != dtypes.float32:
            reward = reward.cast(dtypes.float32)
        term = packed.index(d, n_obs + 1) > 0.5
        trunc = packed.index(d, n_obs + 2) > 0.5
        return obs, reward, term, trunc

    def _runner_for(self, dom: Domain) -> Runner:
        for runner in reversed(self._runners):
            if all(v in dom.variables for v in runner.vars):
                return runner
        if not self._runners:
            raise TempoError(f"{self.name}: call env.reset(domain=...) before env.step",
                             site=user_site())
        raise DomainError(
            f"{self.name}.step over {naming.domain_word(dom)} continues no reset: reset ran "
            f"over {[naming.domain_word(Domain.from_(r.vars)) for r in self._runners]}; step "
            "over a domain containing the reset's (pass domain=...)", site=user_site())

    def _checked_actions(self, a: RecurrentTensor) -> RecurrentTensor:
        want = tuple(self.action_shape)
        got = tuple(a.shape)
        ok = got == want or (self.num_envs is None and got == (1, *want))
        if not ok:
            raise ShapeError(f"{self.name}.step: actions have shape {got}, the action space "
                             f"needs {want}" + ("" if self.num_envs is not None else
                                                f" (or {(1, *want)})"), site=user_site())
        if self.is_discrete or isinstance(self.action_space, gym.spaces.MultiDiscrete):
            if not dtypes.is_integer(a.dtype):
                raise DTypeError(f"{self.name}.step: a discrete action space needs integer "
                                 f"actions, got {a.dtype}", site=user_site())
        elif not dtypes.is_float(a.dtype):
            raise DTypeError(f"{self.name}.step: a continuous action space needs float "
                             f"actions, got {a.dtype}", site=user_site())
        return a
