"""Spatial slices whose ends are bound symbols (`x[0:T]` on a static dim): values when they
fit, on every backend and with the optimisations on or off, and the compile-time refusal when
the bounds make them run past the dim (was a torch failure at run time, a silently shorter
slice on numpy and jax)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import ShapeError

CONFIGS = [("torch", True), ("torch", False), ("jax", True), ("numpy", True), ("numpy", False)]


def _cfg(backend: str, optimised: bool, tmp: str) -> ExecutionConfig:
    base = ExecutionConfig(dev="cpu", backend=backend) if optimised else dataclasses.replace(
        ExecutionConfig.test_cfg(), backend=backend)
    return dataclasses.replace(base, path=tmp + "/")


@pytest.mark.parametrize("backend, optimised", CONFIGS)
def test_bound_slices_of_a_static_dim(backend: str, optimised: bool, tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = np.arange(24, dtype=np.float32).reshape(4, 6)
    ctx = TempoContext(_cfg(backend, optimised, str(tmp_path)), dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    got: dict[str, np.ndarray] = {}
    with ctx:
        x = RT.const(data) * 1.0
        x[1:T, 0:B + 1].sink_udf(lambda v: got.__setitem__("a", np.asarray(v)))
        x[:, T - 2:T].sink_udf(lambda v: got.__setitem__("b", np.asarray(v)))
    ctx.compile({B: 2, T: 4}).execute()
    np.testing.assert_array_equal(got["a"], data[1:4, 0:3])
    np.testing.assert_array_equal(got["b"], data[:, 2:4])


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_a_bound_that_overruns_the_dim_is_refused_at_compile(backend: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = TempoContext(_cfg(backend, True, str(tmp_path)), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        x = RT.const(np.ones((4, 3), np.float32)) * 2.0
        x[:, 1:T].sink_udf(lambda v: None)
    exe = ctx.compile({T: 3})  # 1:3 of size 3 fits
    exe.execute()
    with pytest.raises(ShapeError, match=r"1:4 of dim 1 of size 3 \(with T = 4\)"):
        ctx.compile({T: 4})
