"""Under device_memory_cap_bytes, vectorisation must not turn a loop that fits the cap
into a batched form that holds all T points (acceptance sweep accept3 r30: a sliding-window
mean over a long t raised TempoMemoryError with vectorisation on, fit with it off).

Each program runs on torch, jax and numpy with vectorisation on: uncapped (accounting on,
no limit) its batched form holds more than the cap — so the cap is what changes the plan —
and under the cap it keeps the loops that fit, with the accountant's peak within the cap
and the values equal to NumPy's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

BACKENDS = ("torch", "jax", "numpy")
T_, B_, N, W = 2000, 2, 64, 8
CAP = 200_000  # one (T, N) float32 tensor is 512 KB; the loops hold a few windows
NO_CAP = 1 << 50  # accounting on, nothing reaches it
X = np.random.default_rng(0).standard_normal((B_, T_, N)).astype(np.float32)
SCALE = np.float32(1e-3)

Read = Callable[[Any], RT]  # x at an index along t (at the sink's own b, if any)


def _window(s: int) -> slice:
    return slice(max(0, s - W + 1), s + 1)


def _mean(x: Read, t: Any) -> RT:
    return x(slice(ie.max(0, t - W + 1), t + 1)).mean(0)


def _var(x: Read, t: Any) -> RT:
    w = x(slice(ie.max(0, t - W + 1), t + 1))
    return ((w - w.mean(0)) ** 2).mean(0)


def _scaled(x: Read, t: Any) -> RT:
    return (x(t) * 2.0 + 1.0).exp().sum(0)


def _generated(x: Read, t: Any) -> RT:
    """Nothing gathered and a (T,) result: what the batched form holds is its (T, N)
    intermediates, made from t alone."""
    row = RT.from_expr(t).cast(dtypes.float32) * RT.ones((N,), dtypes.float32)
    return (row * float(SCALE)).exp().sum(0)


def _np_var(a: np.ndarray) -> np.ndarray:
    return ((a - a.mean(0)) ** 2).mean(0)


# name: (program over x at t, NumPy reference for rows xs (T, N) at s)
PROGRAMS: dict[str, tuple[Callable[[Read, Any], RT], Callable[[np.ndarray, int], Any]]] = {
    "window_mean": (_mean, lambda a, s: a[_window(s)].mean(0)),
    "window_var": (_var, lambda a, s: _np_var(a[_window(s)])),
    "pointwise_sum": (_scaled, lambda a, s: np.exp(a[s] * 2.0 + 1.0).sum(0)),
    "generated": (_generated, lambda a, s: np.float32(N) * np.exp(np.float32(s) * SCALE)),
}


def _run(backend: str, name: str, two_dims: bool, cap: int
         ) -> tuple[np.ndarray, dict[str, Any]]:
    cfg = ExecutionConfig(dev="cpu", backend=backend, enable_vectorization=True,
                          device_memory_cap_bytes=cap)
    ctx = TempoContext(cfg, num_dims=2 if two_dims else 1)
    pairs = ctx.variables_and_bounds
    got: dict[tuple[int, int], np.ndarray] = {}
    with ctx:
        if two_dims:
            (b, _), (t, _) = pairs
            x = RT.source_with_ts_udf(lambda ts: X[ts[b], ts[t]], (N,), dtypes.float32,
                                      domain=(b, t))
            read: Read = lambda i: x[b, i]  # noqa: E731
            key: Callable[[Any], tuple[int, int]] = lambda ts: (ts[b], ts[t])  # noqa: E731
        else:
            ((t, _),) = pairs
            x = RT.source_with_ts_udf(lambda ts: X[0, ts[t]], (N,), dtypes.float32,
                                      domain=(t,))
            read = lambda i: x[i]  # noqa: E731
            key = lambda ts: (0, ts[t])  # noqa: E731
        PROGRAMS[name][0](read, t).sink_with_ts_udf(
            lambda v, ts: got.__setitem__(key(ts), np.asarray(v).copy()))
    sizes = (B_, T_) if two_dims else (T_,)
    exe = ctx.compile({bound: n for (_, bound), n in zip(pairs, sizes)})
    exe.execute()
    bs = range(B_) if two_dims else range(1)
    out = np.array([[got[(bb, s)] for s in range(T_)] for bb in bs])
    return out, exe.memory_stats()


def _check(backend: str, name: str, two_dims: bool) -> None:
    _, free = _run(backend, name, two_dims, NO_CAP)
    assert free["peak_bytes"] is not None and free["peak_bytes"] > CAP, free  # batched
    got, stats = _run(backend, name, two_dims, CAP)
    ref = PROGRAMS[name][1]
    bs = range(B_) if two_dims else range(1)
    want = np.array([[ref(X[bb], s) for s in range(T_)] for bb in bs])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert stats["peak_bytes"] is not None and stats["peak_bytes"] <= CAP, stats


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_capped_vectorisation_keeps_the_loops_footprint(backend: str, name: str) -> None:
    _check(backend, name, two_dims=False)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["window_mean", "pointwise_sum"])
def test_capped_vectorisation_over_two_dims(backend: str, name: str) -> None:
    """Over (b, t): b is small and may be batched; t must not be."""
    _check(backend, name, two_dims=True)
