"""rl_games `a2c_continuous` with `ppo: False` (§4.2), on the trivial env as an IVecEnv.

horizon = ep_len, num_actors = num_envs, one mini-epoch over the whole batch, normalised
advantages, no value/input normalisation, tau = lambda, fixed sigma, MLP [P]*(L+1) tanh with
orthogonal init, grad clipping effectively off. The env auto-resets (rl_games expects it).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import torch

from tempo.api.rl.env.trivial_env import TrivialEnv
from tempo.bench.baselines.ppo_cleanrl import DEFAULTS
from tempo.bench.memory import DeviceMemoryAccountant, nbytes_of
from tempo.bench.timing import StatsLogger


class TrivialIVecEnv:
    """rl_games IVecEnv over the torch-native TrivialEnv (flattened obs, auto-reset)."""

    def __init__(self, num_envs: int, obs_shape: tuple[int, ...], ep_len: int, seed: int) -> None:
        import gymnasium.spaces as spaces

        self.env = TrivialEnv(num_envs, obs_shape, ep_len, backend="torch", autoreset=True,
                              seed=seed)
        self.obs_dim = int(np.prod(obs_shape))
        self.info = {
            "observation_space": spaces.Box(-1.0, 1.0, (self.obs_dim,), np.float32),
            "action_space": spaces.Box(-1.0, 1.0, (1,), np.float32),
            "agents": 1, "value_size": 1,
        }
        self.episode_returns: list[float] = []
        self._acc = torch.zeros(num_envs)

    def step(self, actions: torch.Tensor) -> tuple[Any, Any, Any, dict[str, Any]]:
        obs, rew, term, _, _ = self.env.step(actions)
        self._acc += rew
        if bool(term[0]):
            self.episode_returns.append(float(self._acc.mean()))
            self._acc.zero_()
        return obs.reshape(obs.shape[0], -1), rew, term, {}

    def reset(self) -> torch.Tensor:
        return self.env.reset().reshape(self.env.num_envs, -1)

    def get_number_of_agents(self) -> int:
        return 1

    def get_env_info(self) -> dict[str, Any]:
        return self.info

    def set_train_info(self, env_frames: int, *args: Any, **kwargs: Any) -> None:
        """IVecEnv hook; nothing to do."""

    def get_env_state(self) -> None:
        return None

    def set_env_state(self, env_state: Any) -> None:
        """IVecEnv hook; stateless."""

    def has_action_masks(self) -> bool:
        return False


def _params(c: dict[str, Any], vec_env: TrivialIVecEnv, train_dir: str) -> dict[str, Any]:
    N, T = c["num_envs"], c["ep_len"]
    return {"params": {
        "seed": c["seed"] + 1, "torch_threads": 2,
        "algo": {"name": "a2c_continuous"},
        "model": {"name": "continuous_a2c_logstd"},
        "network": {
            "name": "actor_critic", "separate": False,
            "space": {"continuous": {
                "mu_activation": "None", "sigma_activation": "None",
                "mu_init": {"name": "orthogonal_initializer", "gain": 0.01},
                "sigma_init": {"name": "const_initializer", "val": 0}, "fixed_sigma": True}},
            "mlp": {"units": [c["params_per_layer"]] * (c["num_layers"] + 1),
                    "activation": "tanh", "initializer": {"name": "orthogonal_initializer",
                                                          "gain": 1.41421356}},
        },
        "config": {
            "name": "trivial", "env_name": "trivial", "env_info": vec_env.get_env_info(),
            "vec_env": vec_env, "device": "cpu", "device_name": "cpu", "ppo": False,
            "normalize_advantage": True, "normalize_input": False, "normalize_value": False,
            "reward_shaper": {"scale_value": 1.0}, "gamma": c["gamma"], "tau": c["gae_lambda"],
            "learning_rate": c["lr"], "lr_schedule": None, "score_to_win": 1e12,
            "grad_norm": 1e9, "truncate_grads": False, "entropy_coef": c["ent_coef"],
            "e_clip": 0.2, "clip_value": False, "num_actors": N, "horizon_length": T,
            "minibatch_size": N * T, "mini_epochs": 1, "critic_coef": c["vf_coef"],
            "bounds_loss_coef": 0.0, "max_epochs": int(c["iterations"]),
            "save_frequency": 0, "save_best_after": 10**9, "print_stats": False,
            "train_dir": train_dir, "value_bootstrap": False,
        },
    }}


def train_rlgames(cfg: dict[str, Any], acct: DeviceMemoryAccountant,
                  logger: StatsLogger) -> dict[str, Any]:
    """`rlgames` system (E5 base point)."""
    from rl_games.torch_runner import Runner

    c = dict(DEFAULTS)
    c.update({k: v for k, v in cfg.items() if v is not None})
    N, T, obs_shape = c["num_envs"], c["ep_len"], tuple(c["obs_shape"])
    acct.alloc("rollout_obs", nbytes_of(T, N, *obs_shape))
    vec_env = TrivialIVecEnv(N, obs_shape, T, c["seed"])
    with tempfile.TemporaryDirectory() as train_dir:
        cwd = os.getcwd()
        os.chdir(train_dir)  # rl_games writes runs/ and nn/ relative to the cwd
        try:
            runner = Runner()
            runner.load(_params(c, vec_env, train_dir))
            agent = runner.algo_factory.create(runner.algo_name, base_name="run",
                                               params=runner.params)
            env = agent.vec_env
            orig = agent.train_epoch
            state = {"it": 0}

            def logged_epoch() -> Any:
                out = orig()
                ret = env.episode_returns[-1] if env.episode_returns else float("nan")
                logger.log({"iteration": state["it"], "mean_episode_return": ret})
                state["it"] += 1
                return out

            agent.train_epoch = logged_epoch
            agent.train()
        finally:
            os.chdir(cwd)
    import rl_games

    return {"rl_games_version": getattr(rl_games, "__version__", "1.6.5")}
