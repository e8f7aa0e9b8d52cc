"""TrivialEnv: same dynamics in every backend, seedable, obs = state broadcast (§6)."""

from __future__ import annotations

import numpy as np
import pytest

from tempo.api.rl.env.gym_adapter import TrivialGymEnv, TrivialVectorEnv
from tempo.api.rl.env.trivial_env import TrivialEnv


def _reference(s: np.ndarray, actions: list[np.ndarray]) -> list[np.ndarray]:
    out = []
    for a in actions:
        s = np.clip(s + 0.05 * np.clip(a, -1, 1), -1, 1)
        out.append(-np.abs(s))
    return out


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_dynamics_and_seeding(backend: str) -> None:
    env = TrivialEnv(5, (3, 2, 2), 4, backend, seed=3)
    obs0 = np.asarray(env.reset())
    assert obs0.shape == (5, 3, 2, 2) and np.all(obs0 == obs0[:, :1, :1, :1])
    acts = [np.random.default_rng(i).uniform(-2, 2, (5, 1)).astype(np.float32) for i in range(4)]
    ref = _reference(obs0[:, 0, 0, 0].astype(np.float64), [a[:, 0] for a in acts])
    for t, a in enumerate(acts):
        if backend == "torch":
            import torch

            a = torch.from_numpy(a)
        obs, rew, term, trunc, _ = env.step(a)
        np.testing.assert_allclose(np.asarray(rew), ref[t], atol=1e-6)
        assert bool(np.asarray(term).all()) == (t == 3)
    again = TrivialEnv(5, (3, 2, 2), 4, backend, seed=3)
    np.testing.assert_array_equal(np.asarray(again.reset()), obs0)


def test_gym_adapters() -> None:
    venv = TrivialVectorEnv(4, (2, 2), 2, seed=0)
    obs, _ = venv.reset()
    assert obs.shape == (4, 2, 2) and venv.single_action_space.shape == (1,)
    venv.step(np.zeros((4, 1)))
    obs, rew, term, _, info = venv.step(np.zeros((4, 1)))
    assert term.all() and "final_observation" in info and rew.dtype == np.float32
    env = TrivialGymEnv({"observation_shape": (3, 4, 4), "flatten": True, "seed": 0})
    o, _ = env.reset()
    assert o.shape == (48,) and env.observation_space.contains(o)
