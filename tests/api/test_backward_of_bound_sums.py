"""Gradient of a loss summed dim by dim over a bound-sized slice, `x[0:B, 0:T].sum(0).sum(0)`,
with the recorded graph validated (test_cfg): the backward's expand of a static (1, T) row
to the recorded (B, T) is sound once T is known. It was a PassValidationError after
recording (acceptance accept4, a10's A2C loss); values against numpy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_grad_of_a_sum_over_bound_slices_with_validation(backend: str) -> None:
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend, path="",
                              validate_pipeline_stages=True)
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    data = np.arange(12, dtype=np.float32).reshape(3, 4) / 7.0
    got: dict[str, np.ndarray] = {}
    with ctx:
        w = RT.const(np.float32(0.5), requires_grad=True)
        x = RT.const(data).index(0, b).index(0, t)
        loss = (x * x * w)[0:B, 0:T].sum(0).sum(0)
        loss.backward()
        w.grad.sink_udf(lambda v: got.__setitem__("g", np.asarray(v)))
        loss.sink_udf(lambda v: got.__setitem__("loss", np.asarray(v)))
    ctx.compile({B: 3, T: 4}).execute()
    np.testing.assert_allclose(got["loss"], 0.5 * (data ** 2).sum(), rtol=1e-5)
    np.testing.assert_allclose(got["g"], (data ** 2).sum(), rtol=1e-5)
