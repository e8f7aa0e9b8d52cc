"""A read past the end of a vectorised dim is the user's error with vectorisation on too
(accept4): `y = x[t+1] - x` has no point T-1, so a sink of `y[0:T]` must raise
IndexExprError as the loop form does, not receive a value made from the batched shift's
edge padding. Reads that stay inside (clamped, or a sink of the points that exist) still
vectorise and give numpy's values."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import IndexExprError

T_ = 5
CONFIGS = [(backend, on) for backend in ("torch", "jax", "numpy") for on in (True, False)]
X = np.arange(T_, dtype=np.float32)[:, None] * np.array([1.0, 2.0, 3.0], dtype=np.float32)


def run(backend: str, on: bool, form: str) -> tuple[np.ndarray, Any]:
    """x[t] = t * (1, 2, 3); y is a forward difference in one of three forms; the sink's
    (T or T-1, 3) value and the compiled executable."""
    cfg = dataclasses.replace(ExecutionConfig(dev="cpu", backend=backend),
                              enable_vectorization=on, enable_fusion=on)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: dict[str, np.ndarray] = {}
    with ctx:
        x = RT.const(np.array([1.0, 2.0, 3.0], dtype=np.float32)) * RT.from_symbol(t).cast(
            dtypes.float32)
        if form == "clamped":
            y = x[ie.min(t + 1, T - 1)] - x
        else:
            y = x[t + 1] - x
        read = y[0:T - 1] if form == "inside" else y[0:T]
        read.sink_udf(lambda v: got.setdefault("y", np.asarray(v)))
    exe = ctx.compile({T: T_})
    exe.execute()
    return got["y"], exe


@pytest.mark.parametrize("backend,on", CONFIGS)
def test_read_past_the_end_is_an_error(backend: str, on: bool) -> None:
    with pytest.raises(IndexExprError, match=r"x\[t \+ 1\]"):
        run(backend, on, "past")


@pytest.mark.parametrize("backend,on", CONFIGS)
@pytest.mark.parametrize("form", ["clamped", "inside"])
def test_reads_inside_agree_with_numpy(backend: str, on: bool, form: str) -> None:
    y, _ = run(backend, on, form)
    nxt = X[np.minimum(np.arange(T_) + 1, T_ - 1)]
    want = (nxt - X) if form == "clamped" else (X[1:] - X[:-1])
    np.testing.assert_allclose(y, want, rtol=1e-6)
