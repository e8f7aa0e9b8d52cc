"""Reads of temporal ranges that are empty at some points (acceptance accept5a): `x[t+1:T]`
at t = T - 1, `x[0:t]` at t = 0. As in numpy, an empty range is a dim of length 0: sums are
0, an attention over no keys gives zeros. On the old code the torch tiled sum of an empty
range called `torch.zeros(shape, dtype)` (a TypeError, dtype is keyword-only in torch),
reads of point stores stacked an empty list (jax always; torch/numpy where a point store
serves the read, e.g. the gradient of a growing slice with dead-code elimination off), and
numpy's softmax/attention took the max of an empty dim."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import tempo.core.index_expr as ie
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import ShapeError

T_ = 5
X = np.arange(1, T_ + 1, dtype=np.float32) * 0.5
M = (np.arange(T_ * 2, dtype=np.float32).reshape(T_, 2) - 4.0) / 3.0
CONFIGS = [(backend, on) for backend in ("torch", "jax", "numpy") for on in (True, False)]


def config(backend: str, on: bool, **kw: Any) -> ExecutionConfig:
    return dataclasses.replace(ExecutionConfig(dev="cpu", backend=backend),
                               enable_vectorization=on, enable_fusion=on, **kw)


def _softmax(a: np.ndarray) -> np.ndarray:
    if a.size == 0:
        return a
    e = np.exp(a - a.max())
    return e / e.sum()


FORMS: dict[str, tuple[Callable[[RT, RT, Any, Any], RT], Callable[[int], np.ndarray]]] = {
    "future_sum": (lambda x, m, t, T: x[t + 1:T].sum(0), lambda k: X[k + 1:].sum()),
    "past_sum": (lambda x, m, t, T: x[0:t].sum(0), lambda k: X[:k].sum()),
    "window_sum": (lambda x, m, t, T: x[ie.max(0, t - 2):t].sum(0),
                   lambda k: X[max(0, k - 2):k].sum()),
    "past_rows_sum": (lambda x, m, t, T: m[0:t].sum(0), lambda k: M[:k].sum(0)),
    "past_dot": (lambda x, m, t, T: x[0:t] @ x[0:t], lambda k: X[:k] @ X[:k]),
    "future_cumsum": (lambda x, m, t, T: x[t + 1:T].cumsum(0).sum(0),
                      lambda k: np.cumsum(X[k + 1:]).sum()),
    "past_flip": (lambda x, m, t, T: (x[0:t].flip(0) * 2.0).sum(0), lambda k: 2 * X[:k].sum()),
    "exclusive_attention": (lambda x, m, t, T: (m[0:t] @ m).softmax(0) @ m[0:t],
                            lambda k: _softmax(M[:k] @ M[k]) @ M[:k]),
}


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_reads_of_empty_ranges_are_empty_dims(backend: str, on: bool, form: str) -> None:
    build, ref = FORMS[form]
    ctx = TempoContext(config(backend, on), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    got: dict[str, np.ndarray] = {}
    with ctx:
        x = RT.const(X).index(0, t)
        m = RT.const(M).index(0, t)
        build(x, m, t, T)[0:T].sink_udf(lambda v: got.__setitem__("v", np.asarray(v)))
    ctx.compile({T: T_}).execute()
    want = np.stack([np.asarray(ref(k), np.float32) for k in range(T_)])
    np.testing.assert_allclose(got["v"], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_gradient_of_a_growing_slice_without_dead_code_elimination(backend: str,
                                                                   on: bool) -> None:
    """dL/dW through h[b, 0:t+1] read twice: the gradient at h's last point (T, made by the
    shift h[b, t + 1]) sums the reads of an empty range t:T, which ran only with
    dead-code elimination off (BackendError 'stack expects a non-empty TensorList')."""
    B_, H_ = 2, 3
    rng = np.random.default_rng(3)
    W = (rng.normal(size=(H_, H_)) * 0.5).astype(np.float32)
    XS = rng.normal(size=(B_, T_, H_)).astype(np.float32)
    ctx = TempoContext(config(backend, on, enable_dead_code_elim=False), dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    got: dict[str, np.ndarray] = {}
    with ctx:
        w = RT.const(W, requires_grad=True)
        x = RT.const(XS).index(0, b).index(0, t)
        h = RT.placeholder((H_,), dtypes.float32, domain=(b, t))
        h[b, 0] = x.tanh()
        h[b, t + 1] = (h @ w + x[b, t + 1]).tanh()
        per = (h[b, 0:t + 1] * h[b, 0:t + 1]).sum() + (h[b, 0:t + 1] @ h).sum()
        loss = per[0:B, 0:T].sum((0, 1))
        loss.backward()
        w.grad.sink_udf(lambda v: got.__setitem__("gw", np.asarray(v)))
        loss.sink_udf(lambda v: got.__setitem__("loss", np.asarray(v)))
    ctx.compile({B: B_, T: T_}).execute()
    wt = torch.tensor(W, requires_grad=True)
    xt = torch.tensor(XS)
    total = torch.zeros(())
    for bb in range(B_):
        hs = [torch.tanh(xt[bb, 0])]
        for k in range(1, T_):
            hs.append(torch.tanh(hs[-1] @ wt + xt[bb, k]))
        for k in range(T_):
            g = torch.stack(hs[:k + 1])
            total = total + (g * g).sum() + (g @ hs[k]).sum()
    total.backward()
    np.testing.assert_allclose(got["loss"], total.detach().numpy(), rtol=1e-4)
    assert wt.grad is not None
    np.testing.assert_allclose(got["gw"], wt.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_the_max_of_an_empty_range_names_the_user_line() -> None:
    """The tiled max's refusal said 'tiled_max(U=256): the max of an empty range' (an
    internal op name); it now quotes the user's line."""
    ctx = TempoContext(config("torch", True), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        x = RT.const(X).index(0, t)
        y = x[t + 1:T].max(0)[0]
        y[0:T].sink_udf(lambda v: None)
    with pytest.raises(ShapeError, match=r"`y = x\[t \+ 1:T\]\.max\(0\)\[0\]` at "
                                         r"test_empty_range_reads.py:\d+ takes the max") as info:
        ctx.compile({T: T_}).execute()
    assert "tiled" not in str(info.value)
