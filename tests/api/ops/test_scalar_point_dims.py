"""A dim-taking op on a per-point scalar (accept8 mistakes8 s20): `r.cumsum(0)` with r of
shape () over (b, t) was accepted (torch's "only dim" of a 0-d tensor) and then failed in
the kernels: under vectorisation a BackendError with an internal dim number ("expected to be
in range of [-2, 1], but got 2"), on numpy even without it, and a bare IndexError for
max/argmax/logsumexp. It is now a ShapeError at the user's line that says to slice the
symbolic dim first; the sliced form gives the running sum."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import ShapeError

X = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5)
OPS = {
    "cumsum": lambda r: r.cumsum(0), "sum": lambda r: r.sum(0), "mean": lambda r: r.mean(-1),
    "softmax": lambda r: r.softmax(0), "cumprod": lambda r: r.cumprod(0),
    "max": lambda r: r.max(0), "argmax": lambda r: r.argmax(0),
    "logsumexp": lambda r: r.logsumexp(0), "flip": lambda r: r.flip(0),
}


def _ctx(backend: str) -> tuple:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend=backend), dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    return ctx, b, B, t, T


@pytest.mark.parametrize("name", sorted(OPS))
def test_dim_of_a_scalar_point_is_a_shape_error(name: str) -> None:
    ctx, b, B, t, T = _ctx("numpy")
    with ctx:
        r = RT.const(X).index(0, b).index(0, t)
        with pytest.raises(ShapeError) as info:
            OPS[name](r)
    msg = str(info.value)
    assert "0 dims" in msg and "test_scalar_point_dims.py:" in msg and "slice" in msg, msg


@pytest.mark.parametrize("backend", ["torch", "numpy"])
@pytest.mark.parametrize("variant", ["default", "test_cfg"])
def test_running_sum_by_slicing_the_time_dim(backend: str, variant: str) -> None:
    ctx, b, B, t, T = _ctx(backend)
    if variant == "test_cfg":
        ctx.execution_config = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend)
    out: dict[str, np.ndarray] = {}
    with ctx:
        r = RT.const(X).index(0, b).index(0, t)
        g = r[b, 0:t + 1].cumsum(0).index(0, t)
        g[0:B, 0:T].sink_udf(lambda a: out.__setitem__("g", np.asarray(a).copy()))
    ctx.compile({B: 2, T: 3}).execute()
    np.testing.assert_allclose(out["g"], np.cumsum(X, axis=1), rtol=1e-6)
