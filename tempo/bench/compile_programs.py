"""The programs of the compile benchmark (issue 9): MLP+Adam training by depth, GRU/LSTM
backprop-through-time training, and a PPO-shaped actor-learner (batch as a spatial dim
over (i, t), or as a symbolic dim over (i, b, t)). Each builder records the program into a
fresh context and returns it with its bounds, ready for `ctx.compile(bounds)`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.distributions.normal import Normal
from tempo.api.nn import Linear
from tempo.api.nn.rnn import GRUCell, LSTMCell
from tempo.api.optim.optim import Adam
from tempo.core.configs import ExecutionConfig
from tempo.core.index_expr import Symbol


@dataclass
class Program:
    """A recorded program: its context, compile bounds, the number of iterations the
    bounds run, and the per-iteration values a sink collected (filled by `execute`)."""

    name: str
    ctx: TempoContext
    bounds: dict[Symbol, int]
    iterations: int
    losses: list[float]


def _cfg(backend: str) -> ExecutionConfig:
    return ExecutionConfig(dev="cpu", backend=backend, path="")


def _collect(loss: RT, out: list[float]) -> None:
    loss.sink_udf(lambda v: out.append(float(np.asarray(v))))


def mlp_adam(depth: int, width: int = 32, iters: int = 20, backend: str = "torch") -> Program:
    """`depth` Linear layers (tanh between) regressing random data, backward, Adam over i."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((64, 8), np.float32), rng.standard_normal((64, 2), np.float32)
    ctx = TempoContext(_cfg(backend), num_dims=1)
    ((i, I),) = ctx.variables_and_bounds
    losses: list[float] = []
    with ctx:
        sizes = [8] + [width] * (depth - 1) + [2]
        layers = [Linear(a, b, domain=(i,)) for a, b in zip(sizes, sizes[1:])]
        h = RT.const(x)
        for k, layer in enumerate(layers):
            h = layer(h)
            if k < len(layers) - 1:
                h = h.tanh()
        loss = ((h - RT.const(y)) ** 2).mean()
        _collect(loss, losses)
        loss.backward()
        Adam([p for layer in layers for p in layer.parameters], [], lr=0.01).step()
    return Program(f"mlp_adam_d{depth}", ctx, {I: iters}, iters, losses)


def rnn_bptt(cell_kind: str, steps: int = 64, iters: int = 5, hidden: int = 32,
             batch: int = 16, backend: str = "torch") -> Program:
    """A GRU or LSTM cell unrolled over t inside each iteration i, a readout per step,
    mean MSE over t, backprop through time, Adam over i."""
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((steps, batch, 4), np.float32)
    ys = rng.standard_normal((steps, batch, 2), np.float32)
    ctx = TempoContext(_cfg(backend), num_dims=2)
    (i, I), (t, T) = ctx.variables_and_bounds
    losses: list[float] = []
    with ctx:
        cls = GRUCell if cell_kind == "gru" else LSTMCell
        cell = cls(4, hidden, domain=(i,))
        out = Linear(hidden, 2, domain=(i,))
        x = RT.source_with_ts_udf(lambda ts: _as(backend, xs[ts[t]]), (batch, 4), "float32",
                                  domain=(t,))
        y = RT.source_with_ts_udf(lambda ts: _as(backend, ys[ts[t]]), (batch, 2), "float32",
                                  domain=(t,))
        h0 = RT.zeros((batch, hidden))
        h = RT.placeholder((batch, hidden), "float32", domain=(i, t))
        if cell_kind == "gru":
            h[i, 0] = cell(x, h0)
            h[True] = cell(x, h[i, t - 1])
        else:
            c = RT.placeholder((batch, hidden), "float32", domain=(i, t))
            h0n, c0n = cell(x, (h0, h0))
            h[i, 0], c[i, 0] = h0n, c0n
            hn, cn = cell(x, (h[i, t - 1], c[i, t - 1]))
            h[True], c[True] = hn, cn
        step_loss = ((out(h) - y) ** 2).mean()
        loss = step_loss[i, 0:T].mean(0)
        _collect(loss, losses)
        loss.backward()
        Adam(cell.parameters + out.parameters, [], lr=0.01).step()
    return Program(f"{cell_kind}_bptt_T{steps}", ctx, {I: iters, T: steps}, iters, losses)


def _as(backend: str, a: np.ndarray) -> Any:
    if backend == "torch":
        import torch

        return torch.from_numpy(a.copy())
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(a)
    return a.copy()


def ppo_shaped(symbolic_batch: bool, envs: int = 64, steps: int = 64, iters: int = 5,
               hidden: int = 64, obs_dim: int = 48, backend: str = "torch") -> Program:
    """An actor-critic learner shaped like the paper's PPO: a trivial env (state s, action
    a ~ N(mu(obs), sigma), s' = clip(s + 0.05 clip(a)), r = -|s'|) rolled out over t, a
    2-layer tanh trunk with actor and critic heads, GAE computed backwards in time,
    advantages normalised over all envs and steps, backward() and Adam over iterations i.
    With `symbolic_batch` the envs are a domain dim b over (i, b, t); else a spatial dim."""
    gamma, lam = 0.99, 0.96
    ctx = TempoContext(_cfg(backend), num_dims=3 if symbolic_batch else 2)
    vb = ctx.variables_and_bounds
    if symbolic_batch:
        (i, I), (b, B), (t, T) = vb
        point: tuple[int, ...] = ()
    else:
        (i, I), (t, T) = vb
        point = (envs,)
    losses: list[float] = []
    dom = (i, b, t) if symbolic_batch else (i, t)
    with ctx:
        enc = Linear(obs_dim, hidden, domain=(i,))
        hid = Linear(hidden, hidden, domain=(i,))
        actor = Linear(hidden, 1, domain=(i,))
        critic = Linear(hidden, 1, domain=(i,))
        log_std = RT.placeholder((), "float32", domain=(i,), requires_grad=True)
        log_std[0] = RT.zeros(())
        s = RT.placeholder(point, "float32", domain=dom)
        start = RT.uniform(point, low=-1.0, high=1.0,
                           domain=(i, b) if symbolic_batch else (i,))
        if symbolic_batch:
            s[i, b, 0] = start
        else:
            s[i, 0] = start
        obs = s.unsqueeze(-1).expand((*point, obs_dim))
        z = hid(enc(obs).tanh()).tanh()
        # (a Linear to one output squeezes that dim, API.md §3.8; reshape keeps both forms)
        mu, value = actor(z).reshape(point), critic(z).reshape(point)
        dist = Normal(mu, log_std.exp())
        a = dist.sample()
        s_next = (s + a.clip(-1.0, 1.0) * 0.05).clip(-1.0, 1.0)
        s[True] = s_next[(*dom[:-1], t - 1)]
        r = -s_next.abs()
        v_next = RT.placeholder(value.spatial_shape, "float32", domain=dom)
        v_next[(*dom[:-1], T - 1)] = value.detach()  # bootstrap from the last value
        v_next[True] = value.detach()[(*dom[:-1], t + 1)]
        delta = r + v_next * gamma - value.detach()
        adv = RT.placeholder(value.spatial_shape, "float32", domain=dom)
        adv[(*dom[:-1], T - 1)] = delta
        adv[True] = delta + adv[(*dom[:-1], t + 1)] * (gamma * lam)
        ret = adv + value.detach()
        all_adv = adv[i, 0:B, 0:T] if symbolic_batch else adv[i, 0:T]
        norm = (adv - all_adv.mean()) / (all_adv.std() + 1e-8)
        logp = dist.log_prob(a)
        per_step = (-(logp * norm.detach()) + ((value - ret.detach()) ** 2) * 0.25
                    - dist.sigma_entropy().sum() * 0.01)  # sigma's, as before fd4e943
        loss = (per_step[i, 0:B, 0:T] if symbolic_batch else per_step[i, 0:T]).mean()
        _collect(loss, losses)
        loss.backward()
        params = (enc.parameters + hid.parameters + actor.parameters + critic.parameters
                  + [log_std])
        Adam(params, [], lr=1e-4).step()
    bounds = {I: iters, T: steps}
    if symbolic_batch:
        bounds[B] = envs
    kind = "symbolic_b" if symbolic_batch else "spatial_b"
    return Program(f"ppo_{kind}", ctx, bounds, iters, losses)


BUILDERS: dict[str, Callable[..., Program]] = {
    "mlp_adam": mlp_adam, "rnn_bptt": rnn_bptt, "ppo": ppo_shaped,
}
