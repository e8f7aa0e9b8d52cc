"""`Env` against gymnasium itself (API.md §6.4): per point of a symbolic batch, with
`num_envs` (a vector env per point), and through the vectorised UDFs the vectorisation pass
uses; absorbing episodes after the end; the trivial env; registry and missing packages."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.rl.env.env import Env
from tempo.api.rl.env.env_registry.env_registry import EnvRegistry
from tempo.api.rl.env.env_runner import point_seed
from tempo.api.rl.env.wrappers import DoneToTermTruncAPIConverterWrapper
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import DTypeError, ShapeError, TempoError

B, T = 3, 40


def _cfg(backend: str = "torch") -> ExecutionConfig:
    return ExecutionConfig(dev="cpu", backend=backend, path="", seed=7)


def _reference(actions: np.ndarray, seed: int) -> tuple[np.ndarray, ...]:
    """gymnasium's CartPole stepped with `actions` (n, T) until done, then absorbing."""
    n = actions.shape[0]
    e = gym.make_vec("CartPole-v1", n, vectorization_mode="vector_entry_point")
    o, _ = e.reset(seed=seed)
    obs, rew = np.zeros((n, T + 1, 4), np.float32), np.zeros((n, T), np.float32)
    term = np.zeros((n, T), bool)
    obs[:, 0] = o
    done = np.zeros(n, bool)
    for t in range(T):
        o, r, te, tr, _ = e.step(actions[:, t])
        obs[:, t + 1] = np.where(done[:, None], obs[:, t], o)
        rew[:, t] = np.where(done, 0.0, r)
        term[:, t] = np.where(done, term[:, t - 1], te)
        done |= te | tr
    return obs, rew, term


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_cartpole_per_point_of_a_symbolic_batch(backend: str) -> None:
    acts = np.random.default_rng(0).integers(0, 2, (B, T))
    ctx = TempoContext(_cfg(backend), num_dims=2)
    (b, Bs), (t, Ts) = ctx.variables_and_bounds
    out: list = []
    with ctx:
        env = Env.make_env("gym.CartPole-v1")
        assert tuple(env.observation_shape) == (4,) and tuple(env.action_shape) == ()
        o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(b, t))
        o[b, 0] = env.reset(domain=(b,))
        a = RT.source_with_ts_udf(lambda ts: np.int64(acts[ts[b], ts[t]]), (),
                                  dtypes.int64, domain=(b, t))
        o2, r, term, _ = env.step(a)
        o[b, t + 1] = o2
        assert r.dtype == dtypes.float32 and term.dtype == dtypes.bool_
        RT.sink_many_udf([o[0:Bs, 0:Ts], r[0:Bs, 0:Ts], term[0:Bs, 0:Ts]],
                         lambda xs: out.append([np.asarray(x) for x in xs]))
    ctx.compile({Bs: B, Ts: T}).execute()
    obs, rew, term = out[0]
    for k in range(B):
        ref_obs, ref_rew, ref_term = _reference(acts[k : k + 1], point_seed(7, (k,)))
        np.testing.assert_allclose(obs[k], ref_obs[0, :T], rtol=1e-6)
        np.testing.assert_array_equal(rew[k], ref_rew[0])
        np.testing.assert_array_equal(term[k], ref_term[0])
    assert rew.sum() < B * T  # random actions end episodes: absorbing steps were exercised


def test_num_envs_is_one_vector_env_per_point() -> None:
    n = 5
    acts = np.random.default_rng(1).integers(0, 2, (n, T))
    ctx = TempoContext(_cfg(), num_dims=1)
    ((t, Ts),) = ctx.variables_and_bounds
    out: list = []
    with ctx:
        env = Env.make_env("gym.CartPole-v1", num_envs=n)
        assert tuple(env.observation_shape) == (n, 4) and tuple(env.action_shape) == (n,)
        o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(t,))
        o[0] = env.reset()
        a = RT.source_with_ts_udf(lambda ts: acts[:, ts[t]], (n,), dtypes.int64, domain=(t,))
        o[t + 1], r, _, _ = env.step(a)
        RT.sink_many_udf([o[0:Ts], r[0:Ts]], lambda xs: out.append([np.asarray(x) for x in xs]))
    ctx.compile({Ts: T}).execute()
    ref_obs, ref_rew, _ = _reference(acts, point_seed(7, ()))
    np.testing.assert_allclose(out[0][0], ref_obs[:, :T].transpose(1, 0, 2), rtol=1e-6)
    np.testing.assert_array_equal(out[0][1], ref_rew.T)


def test_vectorised_udfs_step_a_block_exactly_as_its_points() -> None:
    """What the vectorisation pass calls: reset/step over b as one UDF call, each point's
    sub-env seeded with its point seed, so the block reads what the points read (CartPole's
    native vector env takes one seed: its points are stepped one by one inside the call)."""
    ctx = TempoContext(_cfg(), num_dims=3)
    (b, _), (i, _), (t_sym, _) = ctx.variables_and_bounds
    with ctx:
        env = Env.make_env("gym.CartPole-v1")
        env.reset(domain=(b, i))
    runner = env._runners[-1]
    reset, step = runner.reset_vectorized(b, B), runner.step_vectorized(b, B)
    acts = np.random.default_rng(2).integers(0, 2, (B, T))
    obs0 = reset({i: 1})
    refs = [_reference(acts[k:k + 1], point_seed(7, (k, 1))) for k in range(B)]
    np.testing.assert_allclose(obs0, [r[0][0, 0] for r in refs], rtol=1e-6)
    for t in range(T):
        packed = step(acts[:, t], obs0, {i: 1})  # (the episode input is only read for order)
        for k, (ref_obs, ref_rew, ref_term) in enumerate(refs):
            np.testing.assert_allclose(packed[k, :4], ref_obs[0, t + 1], rtol=1e-6)
            assert packed[k, 4] == ref_rew[0, t] and (packed[k, 5] > 0.5) == ref_term[0, t]
    with pytest.raises(TempoError, match="point by point|vectorised"):
        runner.step_point(np.int64(0), obs0[0], {b: 0, i: 1})
    assert runner.step_vectorized(t_sym, 2) is None  # episodes step along t: no batching
    with pytest.raises(TempoError, match="sequentially"):
        runner.step_block([(t_sym, 2)])


def test_trivial_block_is_one_vector_env_call_per_step() -> None:
    """The trivial set's vector env seeds sub-envs one by one: a block of B points is one
    env, stepped once per step, and its values are those of B per-point envs."""
    ctx = TempoContext(_cfg(), num_dims=2)
    (b, _), (t_sym, _) = ctx.variables_and_bounds
    with ctx:
        kw = dict(max_episode_steps=5, observation_shape=(2,), continuous=True)
        blocked = Env.make_env("trivial.trivial", **kw)
        single = Env.make_env("trivial.trivial", **kw)
        blocked.reset(domain=(b,))
        single.reset(domain=(b,))
    rb, rs = blocked._runners[-1], single._runners[-1]
    reset, step = rb.reset_vectorized(b, B), rb.step_vectorized(b, B)
    acts = np.random.default_rng(3).uniform(-2, 2, (B, 7, 1)).astype(np.float32)
    got = [reset({})]
    (slot,) = rb.slots.values()
    assert len(slot.envs) == 1
    calls = 0
    inner = slot.envs[0].step

    def counting(a: np.ndarray) -> tuple:
        nonlocal calls
        calls += 1
        return inner(a)

    slot.envs[0].step = counting  # type: ignore[method-assign]
    got += [step(acts[:, t], got[0], {}) for t in range(7)]
    assert calls == 7
    for k in range(B):
        np.testing.assert_array_equal(got[0][k], rs.reset_point({b: k}))
        for t in range(7):
            np.testing.assert_array_equal(got[t + 1][k], rs.step_point(acts[k, t], None, {b: k}))
    assert got[-1][:, -2].all()  # terminated after 5 steps, absorbing after


def test_trivial_env_broadcasts_its_state_and_rewards_minus_abs() -> None:
    ctx = TempoContext(_cfg(), num_dims=1)
    ((t, Ts),) = ctx.variables_and_bounds
    out: list = []
    with ctx:
        env = Env.make_env("trivial.trivial", max_episode_steps=6, observation_shape=(2, 3),
                           continuous=True)
        assert tuple(env.action_shape) == (1,) and env.action_dtype == dtypes.float32
        o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(t,))
        o[0] = env.reset()
        o[t + 1], r, term, trunc = env.step(RT.ones((1,)), domain=(t,))
        RT.sink_many_udf([o[0:Ts], r[0:Ts], term[0:Ts], trunc[0:Ts]],
                         lambda xs: out.append([np.asarray(x) for x in xs]))
    ctx.compile({Ts: 6}).execute()
    obs, rew, term, trunc = out[0]
    s = obs[:, 0, 0]
    assert (obs == s[:, None, None]).all()
    np.testing.assert_allclose(np.diff(s), np.minimum(0.05, 1.0 - s[:-1]), atol=1e-6)
    np.testing.assert_allclose(rew[:-1], -np.abs(s[1:]), atol=1e-6)
    assert term[-1] and trunc[-1] and not term[:-1].any()


def test_errors_name_the_problem() -> None:
    ctx = TempoContext(_cfg(), num_dims=1)
    ((t, _),) = ctx.variables_and_bounds
    with ctx:
        for env_set, package in (("brax", "brax"), ("cule", "torchcule"),
                                 ("torchcatch", "torchcatch")):
            with pytest.raises(TempoError, match=f"needs the package '{package}'"):
                Env.make_env(f"{env_set}.anything")
        with pytest.raises(TempoError, match="env_set one of"):
            Env.make_env("nosuchset.x")
        env = Env.make_env("gym.CartPole-v1")
        with pytest.raises(TempoError, match="reset"):
            env.step(RT.zeros((), dtypes.int64))
        env.reset(domain=(t,))
        with pytest.raises(ShapeError, match="shape"):
            env.step(RT.zeros((3,), dtypes.int64), domain=(t,))
        with pytest.raises(DTypeError, match="integer"):
            env.step(RT.zeros((), dtypes.float32), domain=(t,))


class _OldApiEnv(gym.Env):
    """An old-gym-API env (4-tuple step, bare reset): counts to 3."""

    observation_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, **kwargs):  # type: ignore[no-untyped-def, override]
        self.n = 0
        return np.zeros(1, np.float32)

    def step(self, action):  # type: ignore[no-untyped-def, override]
        self.n += 1
        return np.full(1, self.n, np.float32), float(action), self.n >= 3, {}


def test_custom_env_set_with_a_wrapper() -> None:
    EnvRegistry.register_env_set("counting", lambda bctx: _OldApiEnv())
    ctx = TempoContext(_cfg(), num_dims=1)
    ((t, Ts),) = ctx.variables_and_bounds
    out: list = []
    with ctx:
        env = Env.make_env("counting.x", wrappers=[DoneToTermTruncAPIConverterWrapper])
        o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(t,))
        o[0] = env.reset()
        o[t + 1], r, term, _ = env.step(RT.ones((), dtypes.int64), domain=(t,))
        RT.sink_many_udf([o[0:Ts], r[0:Ts], term[0:Ts]],
                         lambda xs: out.append([np.asarray(x) for x in xs]))
    ctx.compile({Ts: 5}).execute()
    obs, rew, term = out[0]
    np.testing.assert_array_equal(obs[:, 0], [0, 1, 2, 3, 3])
    np.testing.assert_array_equal(rew, [1, 1, 1, 0, 0])
    np.testing.assert_array_equal(term, [False, False, True, True, True])


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
@pytest.mark.parametrize("validate", [False, True])
def test_open_loop_actions_step_after_their_reset(backend: str, validate: bool) -> None:
    """Actions that do not depend on the observation (a fixed open-loop policy) with only
    the reward sunk: nothing reads the reset's observation, yet the steps need their episode
    started (dead-code elimination removed the reset, and the run raised "no episode").
    With every pass validated (as test_cfg() does) the step's map_udf reads two inputs,
    which the validator refused while MapUDFOp declared one."""
    cfg = dataclasses.replace(_cfg(backend), validate_pipeline_stages=validate)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    seen: list[tuple[float, bool]] = []
    with ctx:
        env = Env.make_env("gym.CartPole-v1")
        obs = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(t,))
        obs[0] = env.reset()
        obs[t + 1], r, term, _ = env.step(RT.const(1).cast(env.action_dtype), domain=(t,))
        r.sink_with_ts_udf(lambda v, ts: seen.append((float(v), False)))
        term.sink_with_ts_udf(lambda v, ts: seen.__setitem__(ts[t], (seen[ts[t]][0], bool(v))))
    ctx.compile({T: 12}).execute()
    ref = gym.make("CartPole-v1")
    ref.reset(seed=point_seed(7, ()))
    want = []
    for _ in range(12):
        _, rew, done, _, _ = ref.step(1)
        want.append((float(rew), bool(done)))
        if done:
            break
    assert seen[:len(want)] == want
