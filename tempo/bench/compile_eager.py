"""Eager PyTorch twins of the compile benchmark's recurrent programs (GRU/LSTM BPTT + Adam and
the PPO-shaped actor-learner), written the way a PyTorch user would write them: torch's own
cells, batched over envs, the rollout under `no_grad` and one batched learning pass over all
(t, env) points (CleanRL style). They give the compile benchmark an independent run-time
reference measured in the same process as Tempo, which matters where isl's own scheduler
(the path before issue 9) never finishes compiling and so cannot be timed."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def rnn_bptt(cell_kind: str, steps: int = 64, iters: int = 5, hidden: int = 32,
             batch: int = 16) -> Callable[[], list[float]]:
    """Same data, shapes and loss as `compile_programs.rnn_bptt`; returns a function running
    `iters` Adam steps and giving the losses."""
    import torch

    rng = np.random.default_rng(0)
    xs = torch.from_numpy(rng.standard_normal((steps, batch, 4), np.float32))
    ys = torch.from_numpy(rng.standard_normal((steps, batch, 2), np.float32))
    torch.manual_seed(0)
    cell = (torch.nn.GRUCell if cell_kind == "gru" else torch.nn.LSTMCell)(4, hidden)
    out = torch.nn.Linear(hidden, 2)
    opt = torch.optim.Adam([*cell.parameters(), *out.parameters()], lr=0.01)

    def run() -> list[float]:
        losses = []
        for _ in range(iters):
            h = torch.zeros(batch, hidden)
            c = torch.zeros(batch, hidden)
            step_losses = []
            for k in range(steps):
                if cell_kind == "gru":
                    h = cell(xs[k], h)
                else:
                    h, c = cell(xs[k], (h, c))
                step_losses.append(((out(h) - ys[k]) ** 2).mean())
            loss = torch.stack(step_losses).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    return run


def ppo_shaped(envs: int = 64, steps: int = 64, iters: int = 5, hidden: int = 64,
               obs_dim: int = 48) -> Callable[[], list[float]]:
    """The math of `compile_programs.ppo_shaped`: a rollout of `steps` over `envs` trivial
    envs under no_grad, GAE backwards in time, then the loss over all points at once."""
    import torch

    gamma, lam = 0.99, 0.96
    torch.manual_seed(0)
    enc, hid = torch.nn.Linear(obs_dim, hidden), torch.nn.Linear(hidden, hidden)
    actor, critic = torch.nn.Linear(hidden, 1), torch.nn.Linear(hidden, 1)
    log_std = torch.zeros((), requires_grad=True)
    params = [*enc.parameters(), *hid.parameters(), *actor.parameters(),
              *critic.parameters(), log_std]
    opt = torch.optim.Adam(params, lr=1e-4)

    def heads(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = torch.tanh(hid(torch.tanh(enc(s.unsqueeze(-1).expand(*s.shape, obs_dim)))))
        return actor(z).squeeze(-1), critic(z).squeeze(-1)

    def run() -> list[float]:
        losses = []
        for _ in range(iters):
            s = torch.rand(envs) * 2.0 - 1.0
            states, acts, rews, vals = [], [], [], []
            with torch.no_grad():
                std = log_std.exp()
                for _ in range(steps):
                    mu, v = heads(s)
                    a = mu + std * torch.randn(envs)
                    states.append(s)
                    acts.append(a)
                    vals.append(v)
                    s = (s + a.clamp(-1.0, 1.0) * 0.05).clamp(-1.0, 1.0)
                    rews.append(-s.abs())
                adv = torch.zeros(steps, envs)
                nxt_adv, nxt_v = torch.zeros(envs), vals[-1]
                for k in reversed(range(steps)):
                    delta = rews[k] + gamma * nxt_v - vals[k]
                    nxt_adv = delta + gamma * lam * nxt_adv if k < steps - 1 else delta
                    adv[k], nxt_v = nxt_adv, vals[k]
                ret = adv + torch.stack(vals)
                norm = (adv - adv.mean()) / (adv.std() + 1e-8)
            mu, v = heads(torch.stack(states))
            sigma = log_std.exp()
            logp = (-((torch.stack(acts) - mu) ** 2) / (2 * sigma * sigma) - log_std
                    - math.log(math.sqrt(2 * math.pi)))
            entropy = log_std + 0.5 + 0.5 * math.log(2 * math.pi)
            per_step = -(logp * norm) + ((v - ret) ** 2) * 0.25 - entropy * 0.01
            loss = per_step.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    return run
