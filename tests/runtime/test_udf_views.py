"""A source UDF's result whose memory the user still holds — a view of their array (`lambda
ts: data[ts[t]]`, API §3.2's own example), or a buffer they rewrite — is stored as memory
Tempo owns (prims/udf.py): stored as is, a point aliased the user's memory, so a later
write to it changed points Tempo still reads (x[t] - x[t-1] gave 0), and the numpy
accountant charged each live point as the whole array (`x[max(0, t-1)]` over a (T, N)
array tripped a cap of a fraction of it, with vectorisation on or off)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.prims.udf import _held

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


@pytest.mark.parametrize("kind", ["numpy row", "numpy whole", "torch whole"])
@pytest.mark.parametrize("vec", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_buffer_the_udf_rewrites_is_not_aliased(backend: str, vec: bool, kind: str) -> None:
    buf = np.zeros((1, N), np.float32)
    whole = np.zeros(N, np.float32)
    tbuf = torch.zeros(N)

    def src(s: int) -> Any:
        if kind == "numpy row":  # a view of the user's array
            buf[0] = s
            return buf[0]
        if kind == "numpy whole":  # the user's array itself
            whole[:] = s
            return whole
        tbuf.fill_(s)  # the user's tensor
        return tbuf

    got, _ = _run(backend, vec, src, 6, None)
    want = np.array([[(s - max(0, s - 1)) * 0.5] * N for s in range(6)], np.float32)
    np.testing.assert_array_equal(got, want)


def _kernel_like(fn: Any) -> bool:
    r = fn()  # as the UDF kernels hold a result: one local
    return _held(r)


def test_fresh_results_are_not_copied_and_kept_ones_are() -> None:
    """`_held` decides the copy: a result only the kernel references is stored as is."""
    data, t = np.zeros((4, 3), np.float32), torch.zeros(3)
    assert not _kernel_like(lambda: np.ones(3))
    assert not _kernel_like(lambda: np.ones(6).reshape(2, 3))  # a view of a fresh array
    assert not _kernel_like(lambda: torch.ones(3))
    assert not _kernel_like(lambda: [1.0, 2.0])
    assert _kernel_like(lambda: data[1])
    assert _kernel_like(lambda: data)
    assert _kernel_like(lambda: t)
    assert _kernel_like(lambda: torch.ones(6)[0:3])  # torch views: always copied


@pytest.mark.parametrize("vec", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_of_the_users_array_are_charged_as_rows(backend: str, vec: bool) -> None:
    data = np.random.default_rng(0).standard_normal((T_, N)).astype(np.float32)
    got, stats = _run(backend, vec, lambda s: data[s], T_, CAP)
    want = (data - data[np.maximum(np.arange(T_) - 1, 0)]) * 0.5
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # the stores hold x at t and t - 1 and the result: a few rows, never the user's array
    assert stats["peak_bytes"] is not None and stats["peak_bytes"] <= 8 * N * 4, stats
