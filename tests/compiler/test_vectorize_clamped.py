"""Clamped-shift reads `x[min(t+k, T-1)]` and `x[max(t-k, 0)]` over a vectorised `t`: the
reader is batched (one gather of the points it reads, by a constant index table) instead
of looping, exactly at both ends — E5's GAE bootstrap `v[min(t+1, T-1)]`. Checked with
vectorisation on and off, on torch, jax and numpy, against NumPy (values) and torch
autograd (gradients through the clamped reads)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch
from programs import VECTORIZATION, run_once

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.ops_region import flat_ops

B_, T_ = 3, 6
X = np.random.default_rng(4).standard_normal((B_, T_, 2)).astype(np.float32)
BACKENDS = ("torch", "jax", "numpy")


def _clamped(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The point indices read by `min(t+k, T-1)` and `max(t-k, 0)` at each t."""
    t = np.arange(T_)
    return np.minimum(t + k, T_ - 1), np.maximum(t - k, 0)


@pytest.mark.parametrize("vec", [True, False], ids=["vec", "loop"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [1, 2])
def test_clamped_shift_reads(cfg: Any, backend: str, vec: bool, k: int) -> None:
    """Of a batched producer (`h`) and of one that keeps its loop over t (a source
    without a vectorised form, gathered over the span it is read at)."""
    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, T) = bB, tT
        x = RT.source_with_ts_udf(lambda ts: X[ts[b], ts[t]], (2,), dtypes.float32,
                                  domain=(b, t))
        h = (x * 2.0).exp()
        ahead = h[b, ie.min(t + k, T - 1)] * 3.0 - h
        behind = x[b, ie.max(t - k, 0)] + x * 0.5
        return {"ahead": ahead, "behind": behind}

    c = dataclasses.replace(cfg, backend=backend, **{**VECTORIZATION, "enable_vectorization": vec})
    res, exe = run_once(c, 2, build, {0: B_, 1: T_})
    fwd, back = _clamped(k)
    h = np.exp(X * 2)
    np.testing.assert_allclose(res["ahead"].detach().cpu().numpy(), h[:, fwd] * 3 - h,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res["behind"].detach().cpu().numpy(), X[:, back] + X * 0.5,
                               rtol=1e-6, atol=1e-6)
    looping = sorted(op.name for op in flat_ops(exe.sdg.ops.values())
                     if "d1" in [v.name for v in op.domain.variables]
                     and op.name not in ("index_select", "eval_symbol", "udf_source"))
    assert (looping == []) == vec, looping  # vectorised: no reader loops over t


def _tempo_grad(backend: str, vec: bool, k: int) -> np.ndarray:
    cfg = ExecutionConfig(dev="cpu", backend=backend, enable_vectorization=vec)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    out: list[np.ndarray] = []
    with ctx:
        x = RT.placeholder((2,), dtypes.float32, domain=(t,), requires_grad=True)
        x[True] = RT.source_with_ts_udf(lambda ts: X[0, ts[t]], (2,), dtypes.float32,
                                        domain=(t,))
        loss = ((x[ie.min(t + k, T - 1)].exp() * x).sum() * (t + 1)
                + (x[ie.max(t - k, 0)] * x[ie.max(t - k, 0)] * x).sum())
        loss.backward()
        x.grad[0:T].sink_udf(lambda g: out.append(np.asarray(g).copy()))
    ctx.compile({T: T_}).execute()
    return out[-1]


def _reference(k: int) -> np.ndarray:
    x = torch.tensor(X[0], requires_grad=True)
    fwd, back = _clamped(k)
    ts = torch.arange(1, T_ + 1, dtype=torch.float32)
    loss = ((x[fwd].exp() * x).sum(1) * ts).sum() + (x[back] * x[back] * x).sum()
    loss.backward()
    assert x.grad is not None
    return x.grad.numpy()


@pytest.mark.parametrize("vec", [True, False], ids=["vec", "loop"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [1, 2])
def test_clamped_shift_gradient(backend: str, vec: bool, k: int) -> None:
    got = _tempo_grad(backend, vec, k)
    np.testing.assert_allclose(got, _reference(k), rtol=1e-4, atol=1e-4)
