"""CleanRL-style PPO (`ppo_continuous_action` algorithm, configured as §4.1/§4.2) and its caching
variant, on the torch-native trivial env (the CPU analogue of the zero-copy DLPack env).

CleanRL: rollout under no_grad into preallocated (T, N, ...) buffers, a Python reverse GAE loop,
then a second forward pass over the flattened batch. CleanRL(C) keeps the rollout's autograd
graph instead and calls `backward(retain_graph=True)`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from tempo.api.rl.env.trivial_env import TrivialEnv
from tempo.bench.memory import DeviceMemoryAccountant, nbytes_of
from tempo.bench.timing import StatsLogger

DEFAULTS: dict[str, Any] = dict(
    obs_shape=(3, 4, 4), num_envs=64, ep_len=64, params_per_layer=64, num_layers=2,
    iterations=12, lr=1e-4, gamma=0.99, gae_lambda=0.96, vf_coef=0.5, ent_coef=0.01,
    clip_coef=0.2, seed=0,
)


def _layer(i: int, o: int, std: float) -> nn.Linear:
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
    """Shared trunk: Flatten, Linear(obs->P)+tanh, L x (Linear(P->P)+tanh); actor/critic heads."""

    def __init__(self, obs_dim: int, P: int, L: int) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten(), _layer(obs_dim, P, math.sqrt(2)), nn.Tanh()]
        for _ in range(L):
            layers += [_layer(P, P, math.sqrt(2)), nn.Tanh()]
        self.trunk = nn.Sequential(*layers)
        self.actor_mean = _layer(P, 1, 0.01)
        self.actor_logstd = nn.Parameter(torch.zeros(1, 1))
        self.critic = _layer(P, 1, 1.0)

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(self.trunk(x))

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None) -> Any:
        z = self.trunk(x)
        mean = self.actor_mean(z)
        dist = torch.distributions.Normal(mean, self.actor_logstd.expand_as(mean).exp())
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(1), dist.entropy().sum(1), self.critic(z)


def _cfg(cfg: dict[str, Any]) -> dict[str, Any]:
    c = dict(DEFAULTS)
    c.update({k: v for k, v in cfg.items() if v is not None})
    c["obs_shape"] = tuple(c["obs_shape"])
    return c


def _charge_static(acct: DeviceMemoryAccountant, agent: Agent, c: dict[str, Any]) -> None:
    """Weights, gradients and Adam's two moments; then the rollout storage."""
    n_params = sum(p.numel() for p in agent.parameters())
    acct.alloc("params+grads+adam", 4 * 4 * n_params)
    T, N = c["ep_len"], c["num_envs"]
    acct.alloc("rollout_obs", nbytes_of(T, N, *c["obs_shape"]))
    acct.alloc("rollout_scalars", nbytes_of(6, T, N))


def _activation_bytes(c: dict[str, Any]) -> int:
    """Activations autograd keeps per sample: L+1 hidden tanh outputs and the heads."""
    return nbytes_of(c["ep_len"], c["num_envs"], c["params_per_layer"] * (c["num_layers"] + 1) + 4)


def _gae(rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor,
         next_value: torch.Tensor, next_done: torch.Tensor, c: dict[str, Any]) -> torch.Tensor:
    """CleanRL's Python reverse loop over T."""
    T = rewards.shape[0]
    adv = torch.zeros_like(rewards)
    lastgaelam = torch.zeros_like(next_value)
    for t in reversed(range(T)):
        if t == T - 1:
            nonterminal, nextvalues = 1.0 - next_done, next_value
        else:
            nonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
        delta = rewards[t] + c["gamma"] * nextvalues * nonterminal - values[t]
        lastgaelam = delta + c["gamma"] * c["gae_lambda"] * nonterminal * lastgaelam
        adv[t] = lastgaelam
    return adv


def train(cfg: dict[str, Any], acct: DeviceMemoryAccountant, logger: StatsLogger,
          caching: bool = False) -> dict[str, Any]:
    """Run `iterations` PPO iterations, logging loss and mean_episode_return per iteration."""
    c = _cfg(cfg)
    torch.manual_seed(c["seed"])
    T, N, obs_shape = c["ep_len"], c["num_envs"], c["obs_shape"]
    env = TrivialEnv(N, obs_shape, T, backend="torch", seed=c["seed"])
    agent = Agent(int(np.prod(obs_shape)), c["params_per_layer"], c["num_layers"])
    opt = torch.optim.Adam(agent.parameters(), lr=c["lr"], eps=1e-5)
    _charge_static(acct, agent, c)
    obs = torch.zeros((T, N, *obs_shape))
    actions = torch.zeros((T, N, 1))
    logprobs, rewards, dones, values = (torch.zeros((T, N)) for _ in range(4))
    for it in range(c["iterations"]):
        next_obs = env.reset()
        next_done = torch.zeros(N)
        lp_graph, ent_graph, v_graph = [], [], []
        if caching:
            acct.alloc("rollout_graph", _activation_bytes(c) + nbytes_of(T, N, *obs_shape))
        for step in range(T):
            obs[step] = next_obs
            dones[step] = next_done
            if caching:
                action, lp, ent, value = agent.get_action_and_value(next_obs)
                lp_graph.append(lp)
                ent_graph.append(ent)
                v_graph.append(value.flatten())
            else:
                with torch.no_grad():
                    action, lp, _, value = agent.get_action_and_value(next_obs)
            values[step] = value.detach().flatten()
            actions[step] = action.detach()
            logprobs[step] = lp.detach()
            next_obs, reward, term, trunc, _ = env.step(action.detach())
            rewards[step] = reward
            next_done = (term | trunc).float()
            acct.tick(it * T + step)
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)[0]
            advantages = _gae(rewards, values, dones, next_value, next_done, c)
            returns = advantages + values
        b_adv = advantages.reshape(-1)
        b_adv = (b_adv - b_adv.mean()) / (b_adv.std() + 1e-8)
        b_ret = returns.reshape(-1)
        if caching:
            newlogprob = torch.stack(lp_graph).reshape(-1)
            entropy = torch.stack(ent_graph).reshape(-1)
            newvalue = torch.stack(v_graph).reshape(-1)
        else:  # CleanRL's second forward pass over the whole flattened rollout
            acct.alloc("learn_activations", _activation_bytes(c))
            _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                obs.reshape((-1, *obs_shape)), actions.reshape(-1, 1))
            newvalue = newvalue.view(-1)
        ratio = (newlogprob - logprobs.reshape(-1)).exp()
        pg_loss = torch.max(-b_adv * ratio,
                            -b_adv * torch.clamp(ratio, 1 - c["clip_coef"], 1 + c["clip_coef"]))
        v_loss = 0.5 * ((newvalue - b_ret) ** 2).mean()
        loss = pg_loss.mean() - c["ent_coef"] * entropy.mean() + c["vf_coef"] * v_loss
        opt.zero_grad()
        loss.backward(retain_graph=caching)
        opt.step()
        acct.free("learn_activations")
        acct.free("rollout_graph")
        logger.log({"iteration": it, "loss": loss.item(),
                    "mean_episode_return": rewards.sum(0).mean().item()})
    return {}


def train_cleanrl(cfg: dict[str, Any], acct: DeviceMemoryAccountant,
                  logger: StatsLogger) -> dict[str, Any]:
    """`cleanrl` system of E5/E6."""
    return train(cfg, acct, logger, caching=False)


def train_cleanrl_cache(cfg: dict[str, Any], acct: DeviceMemoryAccountant,
                        logger: StatsLogger) -> dict[str, Any]:
    """`cleanrlcache` system of E5/E6."""
    return train(cfg, acct, logger, caching=True)
