"""Gradients through a recurrence over the row-major order of two dims (`x.previous`,
`x.next_`: API 3.2's lexicographic predecessor / successor with wrap-around), against torch
autograd on the flattened sequence (accept8 e03). The add of `x[True] = x.previous + v` also
runs at the origin, where it reads x at the last point (the wrap) for a value the merge never
takes: reversing that read made the gradient program cyclic ("could not find an order ...
bug in Tempo's compiler") on every config."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

B_, T_ = 2, 3


def _cfg(backend: str, variant: str) -> ExecutionConfig:
    if variant == "test_cfg":
        return dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend)
    cfg = ExecutionConfig(dev="cpu", backend=backend)
    if variant == "vec_off":
        cfg = dataclasses.replace(cfg, enable_vectorization=False, enable_fusion=False)
    return cfg


@pytest.mark.parametrize("variant", ["default", "vec_off", "test_cfg"])
@pytest.mark.parametrize("kind", ["previous", "next_"])
def test_row_major_running_sum_gradient(backend: str, kind: str, variant: str) -> None:
    g = np.random.default_rng(0)
    xs = g.normal(size=(B_, T_)).astype(np.float32)
    ctx = TempoContext(_cfg(backend, variant), dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    out: dict[str, np.ndarray] = {}
    with ctx:
        w = RT.const(np.float32(0.7), requires_grad=True)
        v = (RT.const(xs).index(0, b).index(0, t) * w).tanh()
        x = RT.placeholder((), dtypes.float32, domain=(b, t))
        if kind == "previous":
            x.init = v
            x[True] = x.previous + v
        else:
            x[B - 1, T - 1] = v
            x[True] = x.next_ + v
        (x * x)[0:B, 0:T].sum().backward()
        x[0:B, 0:T].sink_udf(lambda a: out.__setitem__("x", np.asarray(a).copy()))
        w.grad.sink_udf(lambda a: out.__setitem__("g", np.asarray(a).copy()))
    ctx.compile({B: B_, T: T_}).execute()
    wt = torch.tensor(0.7, requires_grad=True)
    flat = torch.tanh(torch.tensor(xs) * wt).reshape(-1)
    c = torch.cumsum(flat, 0) if kind == "previous" else \
        torch.flip(torch.cumsum(torch.flip(flat, [0]), 0), [0])
    (c * c).sum().backward()
    np.testing.assert_allclose(out["x"], c.detach().reshape(B_, T_).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["g"], wt.grad.numpy(), rtol=1e-5, atol=1e-5)
