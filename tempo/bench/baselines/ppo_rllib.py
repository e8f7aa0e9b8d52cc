"""RLlib PPO (ray[rllib]) configured as §4.2, scaled to 2 CPU cores.

The per-env numpy TrivialGymEnv (flattened obs, so the default MLP encoder is used), 2 env
runners x num_envs/2 envs, fragment = ep_len, train batch = minibatch = N*T, one epoch, clipping
disabled (clip 1e6, vf clip 9e6), no KL term, model [P]*(L+1) tanh with a shared value trunk and a
state-independent log-std, as in CleanRL's network.
"""

from __future__ import annotations

import math
from typing import Any

from tempo.bench.baselines.ppo_cleanrl import DEFAULTS
from tempo.bench.memory import DeviceMemoryAccountant, nbytes_of
from tempo.bench.timing import StatsLogger

NUM_RUNNERS = 2


def _config(c: dict[str, Any]) -> Any:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from tempo.api.rl.env.gym_adapter import TrivialGymEnv

    N, T = c["num_envs"], c["ep_len"]
    env_cfg = {"observation_shape": list(c["obs_shape"]), "max_episode_steps": T,
               "flatten": True}
    return (
        PPOConfig()
        .environment(TrivialGymEnv, env_config=env_cfg)
        .framework("torch")
        .env_runners(num_env_runners=NUM_RUNNERS,
                     num_envs_per_env_runner=max(1, N // NUM_RUNNERS),
                     rollout_fragment_length=T, batch_mode="complete_episodes",
                     num_cpus_per_env_runner=0)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=N * T, minibatch_size=N * T, num_epochs=1,
                  lr=c["lr"], gamma=c["gamma"], lambda_=c["gae_lambda"], clip_param=1e6,
                  vf_clip_param=9e6, kl_coeff=0.0, use_kl_loss=False,
                  entropy_coeff=c["ent_coef"], vf_loss_coeff=0.5 * c["vf_coef"])
        .rl_module(model_config=DefaultModelConfig(
            fcnet_hiddens=[c["params_per_layer"]] * (c["num_layers"] + 1),
            fcnet_activation="tanh", vf_share_layers=True, free_log_std=True))
        .debugging(seed=c["seed"], log_level="ERROR")
    )


def train_rllib(cfg: dict[str, Any], acct: DeviceMemoryAccountant,
                logger: StatsLogger) -> dict[str, Any]:
    """`rllib` system (E5 base point). Only the driver's RSS is measured (runners are actors)."""
    import ray

    c = dict(DEFAULTS)
    c.update({k: v for k, v in cfg.items() if v is not None})
    N, T = c["num_envs"], c["ep_len"]
    acct.alloc("rollout_obs", nbytes_of(N, T, *c["obs_shape"]))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False, ignore_reinit_error=True)
    try:
        algo = _config(c).build_algo()
        for it in range(int(c["iterations"])):
            res = algo.train()
            ret = res.get("env_runners", {}).get("episode_return_mean", math.nan)
            loss = (res.get("learners", {}).get("default_policy", {}).get("total_loss",
                                                                           math.nan))
            logger.log({"iteration": it, "mean_episode_return": float(ret),
                        "loss": float(loss)})
        algo.stop()
    finally:
        ray.shutdown()
    return {"num_env_runners": NUM_RUNNERS, "ray_version": ray.__version__}
