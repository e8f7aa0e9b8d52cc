"""The trivial environment (`trivial.trivial`, BENCHMARKS.md §6), native to torch, numpy and jax.

Every RL experiment uses it: a per-env scalar state broadcast to a free observation shape, so that
observation size costs only memory and bandwidth, never simulation time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

BACKENDS = ("numpy", "torch", "jax")
STEP_SIZE = 0.05


def _seed_or_clock(seed: int | None) -> int:
    """Seed from wall-clock time when none is given, as the original does."""
    return int(time.time_ns() % (2**31)) if seed is None else int(seed)


class TrivialEnv:
    """Vectorised TrivialEnv: `s <- clip(s + 0.05 clip(a,-1,1), -1, 1)`, reward `-|s|`.

    Arrays live in the chosen backend (numpy arrays, torch tensors or jax arrays) so baselines
    pay no conversion. Episodes all end together at `max_episode_steps` (terminated = truncated).
    `continuous=False` gives the 2-action variant (action k maps to 2k-1). `device` (torch):
    where states, rewards and flags are made (a GPU baseline's env stays on its GPU).
    """

    def __init__(
        self,
        num_envs: int,
        observation_shape: Sequence[int],
        max_episode_steps: int,
        backend: str = "numpy",
        continuous: bool = True,
        autoreset: bool = False,
        seed: int | None = None,
        device: Any = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.num_envs = int(num_envs)
        self.observation_shape = tuple(int(d) for d in observation_shape)
        self.max_episode_steps = int(max_episode_steps)
        self.backend = backend
        self.continuous = continuous
        self.autoreset = autoreset
        self.device = device
        self.step_count = 0
        self._seed = _seed_or_clock(seed)
        self._init_backend()

    # ---- backend plumbing -------------------------------------------------------------------
    def _init_backend(self) -> None:
        if self.backend == "numpy":
            self._rng = np.random.default_rng(self._seed)
        elif self.backend == "torch":
            import torch

            self._gen = torch.Generator(device=self.device or "cpu").manual_seed(self._seed)
        else:
            import jax

            self._key = jax.random.PRNGKey(self._seed)
            self._jax_step = _make_jax_step(self.observation_shape, self.continuous)
        self.state: Any = None

    def _sample_state(self) -> Any:
        n = self.num_envs
        if self.backend == "numpy":
            return self._rng.uniform(-1.0, 1.0, size=(n,)).astype(np.float32)
        if self.backend == "torch":
            import torch

            return torch.rand(n, generator=self._gen, device=self._gen.device) * 2.0 - 1.0
        import jax

        self._key, sub = jax.random.split(self._key)
        return jax.random.uniform(sub, (n,), minval=-1.0, maxval=1.0)

    def _obs(self, s: Any) -> Any:
        shape = (self.num_envs, *self.observation_shape)
        view = (self.num_envs,) + (1,) * len(self.observation_shape)
        if self.backend == "numpy":
            return np.ascontiguousarray(np.broadcast_to(s.reshape(view), shape))
        if self.backend == "torch":
            return s.view(view).expand(shape).contiguous()
        import jax.numpy as jnp

        return jnp.broadcast_to(s.reshape(view), shape)

    # ---- gym-style API -----------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> Any:
        """Start a new episode for every env; returns the observation batch."""
        if seed is not None:
            self._seed = int(seed)
            self._init_backend()
        self.step_count = 0
        self.state = self._sample_state()
        return self._obs(self.state)

    def reset_to(self, state: Any) -> Any:
        """Start a new episode from per-env states `state` (the backend's array)."""
        self.step_count = 0
        self.state = state
        return self._obs(self.state)

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Advance all envs; returns (obs, reward float32, terminated, truncated, info)."""
        if self.state is None:
            raise RuntimeError("TrivialEnv.step called before reset()")
        self.step_count += 1
        done = self.step_count >= self.max_episode_steps
        flags: Any  # a jax, numpy or torch array: the backend's
        if self.backend == "jax":
            self.state, obs, reward = self._jax_step(self.state, action)
            import jax.numpy as jnp

            flags = jnp.full((self.num_envs,), done)
        else:
            delta = self._delta(action)
            if self.backend == "numpy":
                self.state = np.clip(self.state + STEP_SIZE * delta, -1.0, 1.0).astype(np.float32)
                reward = -np.abs(self.state)
                flags = np.full((self.num_envs,), done)
            else:
                import torch

                self.state = torch.clamp(self.state + STEP_SIZE * delta, -1.0, 1.0)
                reward = -self.state.abs()
                flags = torch.full((self.num_envs,), done, device=self.state.device)
            obs = self._obs(self.state)
        info: dict[str, Any] = {}
        if done and self.autoreset:
            info["final_observation"] = obs
            obs = self.reset()
        return obs, reward, flags, flags, info

    def _delta(self, action: Any) -> Any:
        a = action.reshape(self.num_envs, -1)[:, 0]
        if self.backend == "numpy":
            a = np.asarray(a, dtype=np.float32)
            return np.clip(a, -1.0, 1.0) if self.continuous else 2.0 * a - 1.0
        import torch

        a = a.to(torch.float32)
        return torch.clamp(a, -1.0, 1.0) if self.continuous else 2.0 * a - 1.0


def _make_jax_step(obs_shape: tuple[int, ...], continuous: bool) -> Any:
    """One jitted step with the state donated, as in the original."""
    import jax
    import jax.numpy as jnp

    def step(s: Any, action: Any) -> tuple[Any, Any, Any]:
        a = action.reshape(s.shape[0], -1)[:, 0].astype(jnp.float32)
        a = jnp.clip(a, -1.0, 1.0) if continuous else 2.0 * a - 1.0
        s2 = jnp.clip(s + STEP_SIZE * a, -1.0, 1.0)
        obs = jnp.broadcast_to(s2.reshape((s.shape[0],) + (1,) * len(obs_shape)),
                               (s.shape[0], *obs_shape))
        return s2, obs, -jnp.abs(s2)

    return jax.jit(step, donate_argnums=(0,))
