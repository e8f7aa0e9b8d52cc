"""Gradients of window reads `x[max(0, t-k+1):t+1]` with the default config, vectorisation
on and off, against torch eager autograd (an acceptance-sweep bug: vectorised, the backward
window `g[t:t+k]` — which exists only up to t = T - k — was gathered over all of `0:T`,
and a dataflow region fused it with an op needed at every `t`; both failed to compile)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tempo.api as tapi
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

T_ = 6
X = np.random.default_rng(0).standard_normal((T_, 2)).astype(np.float32)


def _tempo_grad(backend: str, vec: bool, width: int, op: str, weighted: bool) -> np.ndarray:
    cfg = ExecutionConfig(dev="cpu", backend=backend, enable_vectorization=vec)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    out: list[np.ndarray] = []
    with ctx:
        x = RT.placeholder((2,), dtypes.float32, domain=(t,), requires_grad=True)
        x[True] = RT.source_with_ts_udf(lambda ts: X[ts[t]], (2,), dtypes.float32,
                                        domain=(t,))
        w = x[tapi.max(0, t - (width - 1)):t + 1]
        if op == "exp":
            w = w.exp()
        loss = (w.sum(0) * t).sum() if weighted else w.sum()
        loss.backward()
        x.grad[0:T].sink_udf(lambda g: out.append(np.asarray(g).copy()))
    ctx.compile({T: T_}).execute()
    return out[-1]


def _reference(width: int, op: str, weighted: bool) -> np.ndarray:
    x = torch.tensor(X, requires_grad=True)
    loss = torch.zeros(())
    for t in range(T_):
        w = x[max(0, t - width + 1):t + 1]
        if op == "exp":
            w = w.exp()
        loss = loss + (w.sum(0) * t).sum() if weighted else loss + w.sum()
    loss.backward()
    assert x.grad is not None
    return x.grad.numpy()


CASES = [(2, "id", False), (3, "id", False), (2, "exp", False), (3, "exp", False),
         (2, "exp", True), (3, "id", True)]


@pytest.mark.parametrize("vec", [True, False], ids=["vec", "loop"])
@pytest.mark.parametrize("backend", ["torch", "numpy", "jax"])
@pytest.mark.parametrize(("width", "op", "weighted"), CASES)
def test_window_read_gradient(backend: str, vec: bool, width: int, op: str,
                              weighted: bool) -> None:
    got = _tempo_grad(backend, vec, width, op, weighted)
    np.testing.assert_allclose(got, _reference(width, op, weighted), rtol=1e-5, atol=1e-5)
