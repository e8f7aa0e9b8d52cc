"""`TempoEnvWrapper`s: gymnasium wrappers `Env.make_env(..., wrappers=[...])` applies to each
single environment before Tempo vectorises it (so they also work on old-API envs)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class TempoEnvWrapper(gym.Wrapper):
    """Base of the wrappers `make_env` accepts: a gymnasium wrapper built from the env alone."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)


class DoneToTermTruncAPIConverterWrapper(TempoEnvWrapper):
    """Old gym API (`step -> obs, r, done, info`, `reset -> obs`) to gymnasium's
    (`obs, r, terminated, truncated, info`, `(obs, info)`); `TimeLimit.truncated` in info
    marks a time-limit end as truncated, as old gym did."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        out = self.env.reset(**kwargs)
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict):
            return out
        return out, {}

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        out = self.env.step(action)
        if len(out) == 5:
            return out  # already the new API
        obs, reward, done, info = out
        trunc = bool(info.get("TimeLimit.truncated", False)) if isinstance(info, dict) else False
        return obs, reward, bool(done) and not trunc, trunc, info


class Float32ObservationWrapper(TempoEnvWrapper):
    """Observations cast to float32 (e.g. float64 or uint8 envs feeding a float32 network)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if isinstance(space, gym.spaces.Box):
            self.observation_space = gym.spaces.Box(
                space.low.astype(np.float32), space.high.astype(np.float32), space.shape,
                np.float32)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        return np.asarray(obs, np.float32), info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, r, term, trunc, info = self.env.step(action)
        return np.asarray(obs, np.float32), r, term, trunc, info


class ClipActionWrapper(TempoEnvWrapper):
    """Continuous actions clipped into the action space's bounds (Gaussian policies overshoot)."""

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        space = self.env.action_space
        if isinstance(space, gym.spaces.Box):
            action = np.clip(action, space.low, space.high)
        return self.env.step(action)
