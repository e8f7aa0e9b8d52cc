"""The PPO program of the original artifact, written from API.md alone: a 3-dim context
(b, i, t), the trivial env with large-ish observations, `ModelBuilder.from_env` with an
actor-critic head, GAE, advantage normalisation, the clipped surrogate and a logging sink.
It must compile and run on torch and jax, and its numbers must be those of a PPO update:
the first iteration's loss equals the same computation in NumPy on the recorded rollout.
(Learning itself is tested on CartPole: tests/examples/test_rl_examples.py.)"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

import tempo.api.recurrent_tensor as tpo
from tempo.api import RecurrentTensor, TempoContext, rl
from tempo.api.optim.optim import Adam
from tempo.api.rl.env.env import Env
from tempo.api.rl.networks.model_builder import ModelBuilder
from tempo.core.configs import ExecutionConfig

GAMMA, LAMBDA, CLIP, VF, ENT = 0.99, 0.96, 0.2, 0.5, 0.01


def build(backend: str, B: int, I: int, T: int, hidden: int, store: dict,
          iterations_first: bool = False, **flags: Any) -> tuple:
    """The artifact's program over (b, i, t); `iterations_first` declares the dims in the
    order (i, b, t) (the same program: only the loop order of what no dependence orders
    changes, e.g. in which order the action noise is drawn from the generator)."""
    cfg = ExecutionConfig(dev="cpu", backend=backend, path="", **flags)
    ctx = TempoContext(cfg, num_dims=3)
    vb = ctx.variables_and_bounds
    (i, I_), (b, B_), (t, T_) = (vb[0], vb[1], vb[2]) if iterations_first else (vb[1], vb[0],
                                                                                vb[2])

    def episode(x: Any) -> Any:  # x over all of b and t at this i, as (B, T)
        return x[i, 0:B_, 0:T_] if iterations_first else x[0:B_, i, 0:T_]
    with ctx:
        env = Env.make_env("trivial.trivial", max_episode_steps=T, observation_shape=(3, 4, 4),
                           continuous=True)
        net = ModelBuilder.from_env(hidden=[hidden] * 2, domain=(i,), env=env,
                                    actor_critic=True)
        opt = Adam(net.parameters, net.buffers, 1e-3)
        o = RecurrentTensor.placeholder(env.observation_shape, env.observation_dtype,
                                        domain=(b, i, t))
        first, second = (i, b) if iterations_first else (b, i)  # domains follow the universe
        o[first, second, 0] = env.reset(domain=(b, i))
        action, value = net(o.unsqueeze())
        value = value.squeeze(0)
        o[first, second, t + 1], r, term, trunc = env.step(action)
        advantage = rl.gae(r, value.detach(), t, T_, GAMMA, LAMBDA)
        ret = advantage + value.detach()
        adv_all = episode(advantage)
        advantage = advantage.normalize(adv_all.mean(), adv_all.std())
        log_prob = net.log_prob(action).squeeze(0)
        ratio = (log_prob - log_prob.detach()).exp()
        surr = tpo.minimum(ratio * advantage, ratio.clip(1 - CLIP, 1 + CLIP) * advantage)
        v_loss = (value - ret.detach()) ** 2
        loss_pt = -surr + VF * v_loss - ENT * net.entropy().squeeze(0)
        loss = episode(loss_pt).mean()
        loss.backward()
        opt.step()
        RecurrentTensor.sink_many_with_ts_udf(
            [episode(r), episode(value), episode(v_loss), loss],
            lambda xs, ts: store.setdefault("rows", []).append(
                (ts[i], *[np.asarray(x).copy() for x in xs])))
    return ctx, {B_: B, I_: I, T_: T}


def _np_gae(r: np.ndarray, v: np.ndarray) -> np.ndarray:
    adv = np.zeros_like(r, dtype=np.float64)
    last = 0.0
    for t in reversed(range(r.shape[1])):
        nxt = v[:, t + 1] if t + 1 < r.shape[1] else 0.0
        last = r[:, t] + GAMMA * nxt - v[:, t] + GAMMA * LAMBDA * last
        adv[:, t] = last
    return adv


@pytest.mark.parametrize(("backend", "B", "I", "T"), [("torch", 3, 12, 12), ("jax", 2, 2, 4)])
def test_artifact_ppo_runs_and_its_loss_is_ppos(backend: str, B: int, I: int, T: int) -> None:
    store: dict = {}
    ctx, bounds = build(backend, B, I, T, 16, store)
    ctx.compile(bounds).execute()
    rows = sorted(store["rows"], key=lambda row: row[0])
    assert [row[0] for row in rows] == list(range(I))
    _, r, v, v_loss, loss = rows[0]
    # At the update point the ratio is 1: the surrogate is the normalised advantage, the
    # value loss (v - (adv + v))^2 and the entropy of the initial log-sigma 0.
    adv = _np_gae(r.astype(np.float64), v.astype(np.float64))
    norm = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    ent = 0.5 + 0.5 * np.log(2 * np.pi)
    want = (-norm + VF * adv ** 2).mean() - ENT * ent
    np.testing.assert_allclose(float(loss), want, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(v_loss, adv ** 2, rtol=1e-3, atol=1e-5)
    assert np.all(r <= 0) and np.all(r >= -1)  # the trivial env's reward -|s|
    # the update moved the parameters: a later iteration's values differ from the first's
    assert not np.allclose(rows[-1][2], v)


def _rows(backend: str, B: int, I: int, T: int, **flags: Any) -> list:
    store: dict = {}
    ctx, bounds = build(backend, B, I, T, 8, store, iterations_first=True, **flags)
    ctx.compile(bounds).execute()
    return sorted(store["rows"], key=lambda row: row[0])


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_vectorised_ppo_reads_what_the_loops_read(backend: str) -> None:
    """The rollout batched over b (the env's vectorised reset/step) and the learner over
    (b, t) give the per-point program's numbers: the same episodes (each env seeded by its
    point), the same values and losses up to summation order, over several updates.
    Random draws come from one generator stream in the order the schedule makes them, and
    no order is promised: the per-point program draws the action noise in the loop order
    of its dims, the batched one (B, T) draws per iteration (the iteration dim stays a
    loop), so the dims are declared iterations first, where both orders are (i, b, t)."""
    loops = _rows(backend, 3, 3, 5, enable_vectorization=False)
    batched = _rows(backend, 3, 3, 5)
    for a, v in zip(loops, batched):
        assert a[0] == v[0]
        for x, y in zip(a[1:], v[1:]):
            np.testing.assert_allclose(y, x, rtol=2e-5, atol=1e-6)
    np.testing.assert_array_equal(loops[0][1], batched[0][1])  # first rollout: bit for bit


def _calls(B: int, T: int) -> tuple[int, int]:
    """Kernel calls of one run (2 iterations): (ops looping over t, the others)."""
    store: dict = {}
    ctx, bounds = build("torch", B, 2, T, 8, store)
    exe = ctx.compile(bounds)
    ns = exe.generated.namespace
    count: Counter = Counter()
    for k in [k for k in ns if k.startswith("k") and k[1:].isdigit()]:
        def counted(*a: Any, _f: Any = ns[k], _k: str = k) -> Any:
            count[_k] += 1
            return _f(*a)
        ns[k] = counted
    exe.execute()
    over_t = sum(n for k, n in count.items()
                 if "d2" in [v.name for v in exe.sdg.ops[int(k[1:])].domain.variables])
    return over_t, sum(count.values()) - over_t


def test_kernel_calls_do_not_grow_with_b_and_are_constant_per_step() -> None:
    """The rollout runs O(1) kernel calls per env step whatever B (the env steps all B
    envs in one call), and the learner's calls outside the step loops depend on neither
    B nor T."""
    # (sizes past the contraction threshold, so that every size makes the same rewrites)
    c4, large = _calls(16, 4), _calls(64, 4)
    assert c4 == large
    c8, c12 = _calls(16, 8), _calls(16, 12)
    assert c4[1] == c8[1] == c12[1]
    assert c12[0] - c8[0] == c8[0] - c4[0]  # the same number of calls per step
    # per step of the 2 iterations: the step region (policy, env, its next-state `where`)
    # once per iteration and 2 per-t index ops once per run — 4 (it was 11 while GAE's
    # bootstrap `v[min(t+1, T-1)]` looped and the env's `where` was a region of its own)
    assert (c8[0] - c4[0]) / 4 == 3  # the env's `t < limit` is true for every t < T <= limit:
    # constant folding makes it a fill and the `where` on it its branch (was 4)
