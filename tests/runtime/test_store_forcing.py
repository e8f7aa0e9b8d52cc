"""`enable_point_store_fallback=False` (API §4.2; BENCHMARKS §2.2 sets it for Tempo on
jax): every tensor a window store can serve keeps only its window's points. torch and
numpy get ring/compacting stores; jax writes nothing in place, and its point stores,
freed after each point's last read, hold the same window — on every backend the flag
compiles, the values match numpy, and the stored bytes do not grow with T."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tempo.core.index_expr as ie
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import UnsupportedError

W, D = 4, 256  # window, floats per point


def _window_sums(backend: str, T: int, **cfg: Any) -> tuple[list[np.ndarray], Any]:
    """x[0] = 1, x[t+1] = x/2 + 1 (a recurrence: nothing vectorises it away), and the sum
    of the trailing window x[max(t-W+1, 0):t+1] at each t."""
    config = ExecutionConfig(dev="cpu", backend=backend, executor_debug_mode=True, **cfg)
    ctx = TempoContext(config, num_dims=1)
    ((t, TT),) = ctx.variables_and_bounds
    out: list[np.ndarray] = []
    with ctx:
        x = RT.placeholder((D,), dtypes.float32, domain=(t,))
        x[0] = RT.ones((D,))
        x[t + 1] = x * 0.5 + 1.0
        x[ie.max(t - W + 1, 0):t + 1].sum(0).sink_udf(
            lambda v: out.append(np.array(v.tolist(), np.float32)))
    exe = ctx.compile({TT: T})
    exe.execute()
    return out, exe


def _reference(T: int) -> list[np.ndarray]:
    xs = [np.ones(D, np.float32)]
    for _ in range(T - 1):
        xs.append(xs[-1] * np.float32(0.5) + np.float32(1.0))
    return [np.sum(xs[max(t - W + 1, 0):t + 1], axis=0) for t in range(T)]


@pytest.mark.parametrize("backend", ["jax", "torch", "numpy"])
def test_forced_window_stores_are_flat_in_T(backend: str) -> None:
    peaks = []
    for T in (12, 48):
        got, exe = _window_sums(backend, T, enable_point_store_fallback=False)
        np.testing.assert_allclose(np.stack(got), np.stack(_reference(T)), rtol=1e-6)
        peaks.append(exe.memory_stats()["peak_bytes"])
    assert peaks[0] == peaks[1], f"stored bytes grow with T: {peaks}"
    # the window, the points being made and summed (ring stores hold W + the step's
    # writes): about 2W points, far from the 48 that point stores without frees hold
    assert peaks[1] < (2 * W + 2) * D * 4


def test_forcing_window_stores_needs_gc() -> None:
    with pytest.raises(UnsupportedError, match="enable_point_store_fallback=False"):
        _window_sums("jax", 4, enable_point_store_fallback=False, enable_gc=False)
