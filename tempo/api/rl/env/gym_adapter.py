"""Gymnasium adapters for the trivial environment, so external RL libraries can use it.

`TrivialVectorEnv` is a `gymnasium.vector.VectorEnv` over the numpy backend (autoreset on, same
step); `TrivialGymEnv` is the per-env numpy implementation RLlib needs (it cannot take vector envs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from tempo.api.rl.env.seeding import uniform
from tempo.api.rl.env.trivial_env import STEP_SIZE, TrivialEnv


def _spaces(obs_shape: Sequence[int], continuous: bool) -> tuple[gym.Space, gym.Space]:
    obs = gym.spaces.Box(-1.0, 1.0, shape=tuple(obs_shape), dtype=np.float32)
    act: gym.Space = (
        gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        if continuous
        else gym.spaces.Discrete(2)
    )
    return obs, act


class TrivialVectorEnv(gym.vector.VectorEnv):
    """Vector env with gymnasium spaces; autoresets in the same step (final obs in `info`)
    unless `autoreset=False` (Tempo's env runner: its episodes are absorbing)."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}

    def __init__(
        self,
        num_envs: int,
        observation_shape: Sequence[int] = (3, 4, 4),
        max_episode_steps: int = 64,
        continuous: bool = True,
        seed: int | None = None,
        autoreset: bool = True,
    ) -> None:
        self.env = TrivialEnv(num_envs, observation_shape, max_episode_steps, "numpy",
                              continuous=continuous, autoreset=autoreset, seed=seed)
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = _spaces(
            observation_shape, continuous)
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self._seeds: np.ndarray | None = None  # per sub-env stream (seeded resets)
        self._draws = np.zeros(num_envs, np.uint64)

    seeds_sub_envs = True  # reset(seed=[...]) seeds each sub-env (tempo's env runner)

    def reset(self, *, seed: int | Sequence[int] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """`seed`: one for all sub-envs (TrivialEnv's), or one per sub-env as gymnasium's
        vector envs take (each sub-env then draws from its own counter-based stream, also
        on later unseeded resets), so a sub-env does not depend on the others; all sub-envs'
        states come from one vectorised hash (`seeding.uniform`), not a generator each."""
        if isinstance(seed, Sequence | np.ndarray):
            if len(seed) != self.num_envs:
                raise ValueError(f"{len(seed)} seeds for {self.num_envs} sub-envs")
            self._seeds = np.asarray(seed, np.int64).astype(np.uint64)
            self._draws[:] = 0
        elif seed is not None or self._seeds is None:
            self._seeds = None
            return self.env.reset(seed=seed), {}
        state = uniform(self._seeds, self._draws, -1.0, 1.0).astype(np.float32)
        self._draws += np.uint64(1)
        return self.env.reset_to(state), {}

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        obs, rew, term, trunc, info = self.env.step(np.asarray(actions))
        return obs, rew.astype(np.float32), term, trunc, info


class TrivialGymEnv(gym.Env):
    """Single-env numpy TrivialEnv (RLlib runs one of these per sub-environment)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        cfg = dict(config or {})
        self.obs_shape = tuple(cfg.get("observation_shape", (3, 4, 4)))
        if cfg.get("flatten", False):  # lets libraries pick an MLP encoder, not a CNN
            self.obs_shape = (int(np.prod(self.obs_shape)),)
        self.max_episode_steps = int(cfg.get("max_episode_steps", 64))
        self.continuous = bool(cfg.get("continuous", True))
        self.observation_space, self.action_space = _spaces(self.obs_shape, self.continuous)
        self._rng = np.random.default_rng(cfg.get("seed"))
        self._s = 0.0
        self._t = 0

    def _obs(self) -> np.ndarray:
        return np.full(self.obs_shape, self._s, dtype=np.float32)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._s = float(self._rng.uniform(-1.0, 1.0))
        self._t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = float(np.asarray(action).reshape(-1)[0])
        a = float(np.clip(a, -1.0, 1.0)) if self.continuous else 2.0 * a - 1.0
        self._s = float(np.clip(self._s + STEP_SIZE * a, -1.0, 1.0))
        self._t += 1
        done = self._t >= self.max_episode_steps
        return self._obs(), -abs(self._s), done, done, {}
