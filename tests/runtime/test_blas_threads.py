"""The numpy backend runs a program's steps with BLAS on one thread (backends/blas_threads.py:
OpenBLAS splitting each small product over the cores made E2's numpy decode 30x slower on a
loaded machine), restores the user's setting after each step, and keeps a thread count the
user set in the environment. The product itself is checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.runtime.backends import blas_threads


def _blas_threads() -> int:
    """numpy's BLAS threads (a test before may have loaded scipy's own OpenBLAS)."""
    return max(i["num_threads"] for i in blas_threads.numpy_blas().info())


def _program(seen: list[int], out: list[np.ndarray]) -> object:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="numpy"), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    a = np.arange(16 * 128, dtype=np.float32).reshape(16, 128) / 1000.0
    w = np.linspace(-1.0, 1.0, 128 * 64, dtype=np.float32).reshape(128, 64)
    with ctx:
        x = RT.const(a)
        y = (x @ RT.const(w)) * (RT.from_symbol(t).cast(x.dtype) + 1.0)
        y.sink_udf(lambda v: (seen.append(_blas_threads()), out.append(np.asarray(v))))
    return ctx.compile({T: 3}), a @ w


def test_numpy_steps_run_blas_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in blas_threads._ENV:
        monkeypatch.delenv(var, raising=False)
    seen: list[int] = []
    out: list[np.ndarray] = []
    exe, ref = _program(seen, out)
    with threadpool_limits(limits=2, user_api="blas"):
        outside = _blas_threads()
        exe.execute()  # type: ignore[attr-defined]
        assert _blas_threads() == outside  # restored after the run
    assert seen == [1, 1, 1]
    for k, v in enumerate(out):
        np.testing.assert_allclose(v, ref * (k + 1), rtol=1e-5)


def test_a_users_blas_thread_setting_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    seen: list[int] = []
    exe, _ = _program(seen, [])
    with threadpool_limits(limits=2, user_api="blas"):
        outside = _blas_threads()
        exe.execute()  # type: ignore[attr-defined]
    assert seen == [outside] * 3
