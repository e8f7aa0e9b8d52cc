"""`tempo.api.rl` objectives equal NumPy references (API.md §6.4): n-step returns, their
bootstrapped form and TD residual, and GAE at λ ∈ {0, 0.95, 1}, over the true bound of t
(no bootstrap) and over a shorter window T (bootstrapped from v[T])."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext, rl
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

B, TT = 3, 12
GAMMA = 0.9


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return (rng.standard_normal((B, TT)).astype(np.float32),
            rng.standard_normal((B, TT)).astype(np.float32))


def _np_nstep(r: np.ndarray, v: np.ndarray | None, T: int, n: int, g: float) -> np.ndarray:
    out = np.zeros((B, T), np.float64)
    for b in range(B):
        for t in range(T):
            j = min(t + n, T)
            out[b, t] = sum(g ** k * r[b, t + k] for k in range(j - t))
            if v is not None and j < r.shape[1]:
                out[b, t] += g ** (j - t) * v[b, j]
    return out


def _np_gae(r: np.ndarray, v: np.ndarray, T: int, g: float, lam: float) -> np.ndarray:
    adv = np.zeros((B, T), np.float64)
    for b in range(B):
        last = 0.0
        for t in reversed(range(T)):
            nxt = v[b, t + 1] if t + 1 < r.shape[1] else 0.0
            delta = r[b, t] + g * nxt - v[b, t]
            last = delta + (g * lam * last if t + 1 < T else 0.0)
            adv[b, t] = last
    return adv


def _run(build, backend: str, window: int | None,  # type: ignore[no-untyped-def]
         cfg: ExecutionConfig | None = None) -> np.ndarray:
    r_np, v_np = _data()
    cfg = cfg or ExecutionConfig(dev="cpu", backend=backend, path="")
    ctx = TempoContext(cfg, num_dims=2)
    (b, Bs), (t, Ts) = ctx.variables_and_bounds
    out: list = []
    with ctx:
        r = RT.source_with_ts_udf(lambda ts: r_np[ts[b], ts[t]], (), dtypes.float32,
                                  domain=(b, t))
        v = RT.source_with_ts_udf(lambda ts: v_np[ts[b], ts[t]], (), dtypes.float32,
                                  domain=(b, t))
        T = Ts if window is None else window
        y = build(r, v, t, T)
        y[0:Bs, 0:T].sink_udf(lambda x: out.append(np.asarray(x)))
    ctx.compile({Bs: B, Ts: TT}).execute()
    return out[0]


@pytest.mark.parametrize("window", [None, 7])
@pytest.mark.parametrize("n", [1, 3, 20])
def test_n_step_returns_and_td_residual(window: int | None, n: int) -> None:
    r, v = _data()
    T = TT if window is None else window
    got = _run(lambda r_, v_, t, T_: rl.n_step_returns(r_, t, T_, n=n, gamma=GAMMA), "torch",
               window)
    np.testing.assert_allclose(got, _np_nstep(r, None, T, n, GAMMA), rtol=1e-5, atol=1e-5)
    got = _run(lambda r_, v_, t, T_: rl.bootstrapped_n_step_returns(r_, v_, t, T_, n, GAMMA),
               "torch", window)
    ref = _np_nstep(r, v, T, n, GAMMA)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    got = _run(lambda r_, v_, t, T_: rl.n_step_td_residual(r_, v_, t, T_, n, GAMMA),
               "torch", window)
    np.testing.assert_allclose(got, ref - v[:, :T], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("window", [None, 7])
@pytest.mark.parametrize("lam", [0.0, 0.95, 1.0])
def test_gae(window: int | None, lam: float) -> None:
    r, v = _data()
    T = TT if window is None else window
    got = _run(lambda r_, v_, t, T_: rl.gae(r_, v_, t, T_, GAMMA, lam), "torch", window)
    np.testing.assert_allclose(got, _np_gae(r, v, T, GAMMA, lam), rtol=1e-5, atol=1e-5)


def test_gae_lambda_one_is_return_minus_value_and_zero_is_td() -> None:
    """The documented limits, against the n-step references (n ≥ T: Monte Carlo)."""
    r, v = _data()
    mc = _np_nstep(r, None, TT, TT, GAMMA)
    np.testing.assert_allclose(_np_gae(r, v, TT, GAMMA, 1.0), mc - v, rtol=1e-5, atol=1e-5)
    td1 = _np_nstep(r, v, TT, 1, GAMMA) - v
    np.testing.assert_allclose(_np_gae(r, v, TT, GAMMA, 0.0), td1, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["jax", "numpy"])
def test_gae_on_other_backends(backend: str) -> None:
    r, v = _data()
    got = _run(lambda r_, v_, t, T_: rl.gae(r_, v_, t, T_, GAMMA, 0.95), backend, None)
    np.testing.assert_allclose(got, _np_gae(r, v, TT, GAMMA, 0.95), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lam", [0.0, 0.95])
def test_gae_with_the_pipeline_validated(lam: float) -> None:
    """test_cfg validates the recorded graph: gae's expand of a static (1, T) row to the
    bound-shaped (B, T) it was recorded with is sound once T is known (was a
    PassValidationError, acceptance accept4 a10)."""
    r, v = _data()
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), path="", validate_pipeline_stages=True)
    got = _run(lambda r_, v_, t, T_: rl.gae(r_, v_, t, T_, GAMMA, lam), "torch", None, cfg)
    np.testing.assert_allclose(got, _np_gae(r, v, TT, GAMMA, lam), rtol=1e-5, atol=1e-5)
