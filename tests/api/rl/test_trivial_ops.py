"""The trivial env's step as Tempo ops (`trivial_ops`) against the env runner's UDF, which
steps the gymnasium-style vector env (`TrivialVectorEnv`, tested against per-point envs in
test_env.py): bit for bit, per point and vectorised over the envs, continuous and discrete,
past the episode's end (absorbing), on three backends; and the E5 program's rollout makes
no env UDF call."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.rl.env import trivial_ops
from tempo.api.rl.env.env import Env
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import DomainError

B, I, T, LIMIT = 3, 2, 6, 4  # T > LIMIT: two steps after the end (absorbing)


def _rollout(backend: str, vectorize: bool, continuous: bool) -> tuple[dict, Any]:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend=backend, path="", seed=3,
                                       enable_vectorization=vectorize), num_dims=3)
    (b, Bs), (i, Is), (t, Ts) = ctx.variables_and_bounds
    got: dict[str, dict[int, np.ndarray]] = {}
    with ctx:
        env = Env.make_env("trivial.trivial", max_episode_steps=LIMIT,
                           observation_shape=(2, 3), continuous=continuous)
        o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(b, i, t))
        o[b, i, 0] = env.reset(domain=(b, i))
        tb = RT.from_expr(t) + RT.from_expr(b) + RT.from_expr(i)
        # actions read the obs through max, exact in any order (a sum of the broadcast
        # state rounds by its reduction order: 1 ulp between the two paths on some states)
        if continuous:  # actions past [-1, 1] too: the env clips them
            a = (tb.cast("float32") * 0.7 - 1.3 + o.max() * 3.0).reshape((1,))
        else:
            a = ((tb + (o.max() > 0).cast("int64")) % 2).reshape(())
        o[b, i, t + 1], r, term, trunc = env.step(a)
        for name, x in (("o", o), ("r", r), ("term", term), ("trunc", trunc)):
            RT.sink_with_ts_udf(x[0:Bs, i, 0:Ts], lambda v, ts, n=name: got.setdefault(
                n, {}).__setitem__(int(ts[i]), np.asarray(v)))
    exe = ctx.compile({Bs: B, Is: I, Ts: T})
    exe.execute()
    return got, exe


def _udf_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trivial_ops, "applies", lambda env: False)


@pytest.mark.parametrize("backend,vectorize,continuous", [
    ("torch", True, True), ("torch", False, True), ("torch", True, False),
    ("numpy", True, True), ("numpy", False, False), ("jax", True, True)])
def test_ops_step_equals_the_vector_env(backend: str, vectorize: bool, continuous: bool,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ours, exe = _rollout(backend, vectorize, continuous)
    assert not any(isinstance(op, ops.MapUDFOp) for op in exe.sdg.ops.values())
    with monkeypatch.context() as m:
        _udf_path(m)
        ref, ref_exe = _rollout(backend, vectorize, continuous)
    assert any(isinstance(op, ops.MapUDFOp) for op in ref_exe.sdg.ops.values())
    for name in ("o", "r", "term", "trunc"):
        for it in range(I):
            assert ours[name][it].shape == ref[name][it].shape
            if backend == "jax" and name in ("o", "r"):  # XLA contracts s + 0.05 a to
                # an FMA (one rounding), numpy rounds the product first: an ulp of the
                # state (|s| <= 1) per step, carried on through the actions
                np.testing.assert_allclose(ours[name][it], ref[name][it], rtol=0,
                                           atol=1e-6, err_msg=name)
            else:
                np.testing.assert_array_equal(ours[name][it], ref[name][it], err_msg=name)
    assert (ours["r"][0][:, LIMIT:] == 0).all() and ours["term"][0][:, LIMIT - 1:].all()
    assert not ours["term"][0][:, :LIMIT - 1].any()
    assert (ours["o"][0][:, LIMIT] == ours["o"][0][:, T - 1]).all()  # absorbing


def test_step_must_add_one_dim_to_the_reset() -> None:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="torch", path=""), num_dims=3)
    (b, _), (i, _), (t, _) = ctx.variables_and_bounds
    with ctx:
        env = Env.make_env("trivial.trivial", max_episode_steps=4, observation_shape=(2,))
        env.reset(domain=(b,))
        a = (RT.from_expr(b) + RT.from_expr(i) + RT.from_expr(t)).cast("float32")
        with pytest.raises(DomainError, match="exactly one dim"):
            env.step(a.reshape((1,)))
