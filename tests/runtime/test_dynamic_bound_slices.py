"""Reads up to a boolean bound (API §7 item 10) that use its value (acceptance accept6 c07:
a REINFORCE learner whose episodes end at termination, `{T: (40, term)}`, returns by
`rew[i, 0:T].discounted_cum_sum(g)`). The bound's value is known only once its loop has
stopped, but ops computing from it ran with the maximum: `x[0:T].mean()` divided by the
maximum (silently: 0.75 for 1.5), `arange(T)` (inside discounted_cum_sum/discounted_sum) had
the maximum's length (a shape error at run time), and binding the bounds into the kernels
raised `KeyError: T` for a cumsum/discounted sum. With the stop over (i, t) each i has its own
T, so ops using T run per i, after i's loop over t."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

CONFIGS = [(backend, on) for backend in ("torch", "jax", "numpy") for on in (True, False)]


def config(backend: str, on: bool) -> ExecutionConfig:
    return dataclasses.replace(ExecutionConfig(dev="cpu", backend=backend),
                               enable_vectorization=on, enable_fusion=on)


def _f(v: object) -> list[float]:
    return np.asarray(v, dtype=np.float64).reshape(-1).tolist()


def _dcs(xs: list[float], g: float) -> list[float]:
    return [sum(g ** (j - k) * xs[j] for j in range(k, len(xs))) for k in range(len(xs))]


@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_reads_to_a_boolean_bound_over_t(backend: str, on: bool) -> None:
    ctx = TempoContext(config(backend, on), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    got: dict[str, list[float]] = {}
    with ctx:
        x = RT.from_symbol(t).cast(dtypes.float32) * 2.0 + 1.0
        done = RT.from_symbol(t) >= 3
        outs = {"sum": x[0:T].sum(), "mean": x[0:T].mean(), "future_mean": x[t:T].mean(),
                "dcs": x[0:T].discounted_cum_sum(0.5, dim=0), "dsum": x[0:T].discounted_sum(0.5),
                "cumsum": x[0:T].cumsum(0), "ramp": x[0:T] * RT.arange(T).cast(dtypes.float32)}
        for k, v in outs.items():
            v.sink_udf(lambda a, k=k: got.setdefault(k, []).extend(_f(a)))
    ctx.compile({T: (8, done)}).execute()
    xs = [1.0, 3.0, 5.0, 7.0]  # t = 0..3: done at t = 3
    want = {"sum": [16.0], "mean": [4.0], "future_mean": [sum(xs[k:]) / (4 - k) for k in range(4)],
            "dcs": _dcs(xs, 0.5), "dsum": [sum(0.5 ** k * v for k, v in enumerate(xs))],
            "cumsum": list(np.cumsum(xs)), "ramp": [v * k for k, v in enumerate(xs)]}
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, err_msg=k)


@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_each_outer_point_uses_its_own_bound(backend: str, on: bool) -> None:
    """Episode i ends at t = i + 1 (i + 2 points): its mean and discounted returns use that
    length, also for the ops of empty domain (arange(T), the mean's divisor)."""
    ctx = TempoContext(config(backend, on), dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    got: dict[str, list[float]] = {}
    with ctx:
        x = RT.from_symbol(t).cast(dtypes.float32) + RT.from_symbol(i).cast(dtypes.float32)
        done = RT.from_symbol(t) >= RT.from_symbol(i) + 1
        ret = x[i, 0:T].discounted_cum_sum(0.5, dim=0)
        ret.sink_udf(lambda a: got.setdefault("ret", []).extend(_f(a)))
        x[i, 0:T].mean().sink_udf(lambda a: got.setdefault("mean", []).extend(_f(a)))
    ctx.compile({I: 3, T: (8, done)}).execute()
    eps = [[float(tt + ii) for tt in range(ii + 2)] for ii in range(3)]
    np.testing.assert_allclose(got["ret"], [g for xs in eps for g in _dcs(xs, 0.5)], rtol=1e-6)
    np.testing.assert_allclose(got["mean"], [sum(xs) / len(xs) for xs in eps], rtol=1e-6)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_placeholder_of_empty_domain_reading_the_bound(backend: str) -> None:
    """A merge of empty domain defined from an op using T (both take each i's own T) is
    extended with it (accept6 flags sweep: with enable_algebraic_optimizer=False, c07 kept
    such a merge and the extension raised RewriteError, readers before writers)."""
    cfg = dataclasses.replace(config(backend, True), enable_algebraic_optimizer=False)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    got: list[float] = []
    with ctx:
        x = RT.from_symbol(t).cast(dtypes.float32) + RT.from_symbol(i).cast(dtypes.float32)
        done = RT.from_symbol(t) >= RT.from_symbol(i) + 1
        n = RT.placeholder((), dtypes.float32)
        n[True] = RT.arange(T).cast(dtypes.float32).sum() + 1.0
        (x[i, 0:T].sum() / n).sink_udf(lambda a: got.extend(_f(a)))
    ctx.compile({I: 3, T: (8, done)}).execute()
    eps = [[float(tt + ii) for tt in range(ii + 2)] for ii in range(3)]
    np.testing.assert_allclose(got, [sum(xs) / (sum(range(len(xs))) + 1) for xs in eps],
                               rtol=1e-6)
