"""A source UDF's result that is a view of the user's array (`lambda ts: data[ts[t]]`, API
§3.2's own example) is stored as memory Tempo owns (prims/udf.py): stored as the view, a
point aliased the user's array, so a later write to it changed points Tempo still reads
(x[t] - x[t-1] gave 0), and the numpy accountant charged each live point as the whole
array (`x[max(0, t-1)]` over a (T, N) array tripped a cap of a fraction of it, with
vectorisation on or off)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

BACKENDS = ("torch", "jax", "numpy")
T_, N = 2000, 64
CAP = 200_000  # the user's array is T * N * 4 = 512 KB; the program holds two points


def _run(backend: str, vec: bool, src: Any, steps: int, cap: int | None
         ) -> tuple[np.ndarray, dict[str, Any]]:
    cfg = ExecutionConfig(dev="cpu", backend=backend, enable_vectorization=vec,
                          enable_dataflow_grouping=vec, device_memory_cap_bytes=cap)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: dict[int, np.ndarray] = {}
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: src(ts[t]), (N,), dtypes.float32, domain=(t,))
        ((x - x[ie.max(0, t - 1)]) * 0.5).sink_with_ts_udf(
            lambda v, ts: got.__setitem__(ts[t], np.asarray(v).copy()))
    exe = ctx.compile({T: steps})
    exe.execute()
    return np.stack([got[s] for s in range(steps)]), exe.memory_stats()


@pytest.mark.parametrize("vec", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_view_of_a_buffer_the_udf_rewrites_is_not_aliased(backend: str, vec: bool) -> None:
    buf = np.zeros((1, N), np.float32)

    def src(s: int) -> np.ndarray:
        buf[0] = s  # the user's buffer, rewritten at every call (an env's observation)
        return buf[0]

    got, _ = _run(backend, vec, src, 6, None)
    want = np.array([[(s - max(0, s - 1)) * 0.5] * N for s in range(6)], np.float32)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("vec", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_of_the_users_array_are_charged_as_rows(backend: str, vec: bool) -> None:
    data = np.random.default_rng(0).standard_normal((T_, N)).astype(np.float32)
    got, stats = _run(backend, vec, lambda s: data[s], T_, CAP)
    want = (data - data[np.maximum(np.arange(T_) - 1, 0)]) * 0.5
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # the stores hold x at t and t - 1 and the result: a few rows, never the user's array
    assert stats["peak_bytes"] is not None and stats["peak_bytes"] <= 8 * N * 4, stats
