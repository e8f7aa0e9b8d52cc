"""Ops that use a boolean bound's value T (`{T: (MAXT, done)}` over (i, t)) must run after
the loop that fixes T (accept8 e10). Three ways they ran inside it and took the cap MAXT:
(1) `arange(T - t)` over (i, t) got no order after the loop (only reads of `x[.., T - 1]`
did): the suffix `gamma ** arange(T - t) * r[i, t:T]` failed with 'size of tensor a (8) must
match ... (3)'; (2) when the stop of iteration i + 1 needs the op through the weights
(trained from iteration i's gradient) it got no order at all; (3) grouping fused the
episode's forward ops (which the stop needs) with the backward's 1/T of `x[i, 0:T].mean()`,
so the region ran in the loop: the mean divided by MAXT -- a silently wrong loss and
gradient on the default config. Values against numpy / torch autograd."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

MAXT, LR, G = 8, 0.1, 0.5
R = np.array([[0.5, 0.7, 0.9, 0.1, 0.2, 0.3, 0.4, 0.5], [0.1] * 8, [0.9, 0.8, 0.1, 0.1, 0.1,
              0.1, 0.1, 0.1]], np.float32)


def _cfg(backend: str, variant: str) -> ExecutionConfig:
    cfg = ExecutionConfig(dev="cpu", backend=backend)
    if variant == "fusion_off":
        cfg = dataclasses.replace(cfg, enable_fusion=False)
    if variant == "test_cfg":
        cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend)
    return cfg


def _episode(ctx, i, t, w):
    r = RT.const(R).index(0, i).index(0, t) * w
    acc = RT.placeholder((), dtypes.float32, domain=(i, t))
    acc[i, 0] = r
    acc[True] = acc[i, t - 1] + r
    return r, acc > 1.5


@pytest.mark.parametrize("backend", ["torch", "numpy"])
@pytest.mark.parametrize("variant", ["default", "fusion_off", "test_cfg"])
def test_suffix_returns_and_mean_with_weights_from_the_last_gradient(backend: str,
                                                                     variant: str) -> None:
    ctx = TempoContext(_cfg(backend, variant), dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    out: dict[str, list] = {"G": []}
    with ctx:
        w = RT.placeholder((), dtypes.float32, domain=(i,), requires_grad=True)
        r, done = _episode(ctx, i, t, w)
        ret = (G ** RT.arange(T - t).cast(dtypes.float32) * r[i, t:T]).sum(0)
        loss = (ret.detach() * r + r * r)[i, 0:T].mean(0)
        loss.backward()
        w[0] = RT.const(np.float32(1.0))
        w[True] = w[i - 1].detach() - LR * w.grad[i - 1]
        ret.sink_udf(lambda v: out["G"].append(float(np.asarray(v))))
        loss[0:I].sink_udf(lambda v: out.__setitem__("loss", np.asarray(v).copy()))
    ctx.compile({I: 3, T: (MAXT, done)}).execute()
    wt, losses, rets = torch.tensor(1.0, requires_grad=True), [], []
    for k in range(3):
        r = torch.tensor(R[k]) * wt
        acc = torch.cumsum(r.detach(), 0).numpy()
        n = next((j + 1 for j in range(MAXT) if acc[j] > 1.5), MAXT)
        r = r[:n]
        ret = torch.stack([sum(G ** j * r[s + j] for j in range(n - s)) for s in range(n)])
        rets += ret.tolist()
        loss = (ret.detach() * r + r * r).mean()
        losses.append(loss.item())
        (g,) = torch.autograd.grad(loss, [wt])
        wt = (wt.detach() - LR * g).requires_grad_(True)
    np.testing.assert_allclose(out["G"], rets, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["loss"], losses, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_suffix_returns_without_training(backend: str) -> None:
    ctx = TempoContext(_cfg(backend, "default"), dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    out: list[float] = []
    with ctx:
        r, done = _episode(ctx, i, t, RT.const(np.float32(1.0)))
        ret = (G ** RT.arange(T - t).cast(dtypes.float32) * r[i, t:T]).sum(0)
        ret.sink_udf(lambda v: out.append(float(np.asarray(v))))
    ctx.compile({I: 2, T: (MAXT, done)}).execute()
    want = [0.5 + 0.35 + 0.225, 0.7 + 0.45, 0.9] + [0.1 * (1 - G ** (8 - s)) / (1 - G)
                                                    for s in range(8)]
    np.testing.assert_allclose(out, want, rtol=1e-5)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
@pytest.mark.parametrize("variant", ["default", "test_cfg"])
def test_read_of_the_episodes_last_point_keeps_it_alive(backend: str, variant: str) -> None:
    """`r[i, T - 1]` read from every t of the gradient program: frees were placed with T at
    its maximum, so the episode's real last point was freed before the read (KeyError)."""
    ctx = TempoContext(_cfg(backend, variant), dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    out: dict[str, np.ndarray] = {}
    with ctx:
        w = RT.placeholder((), dtypes.float32, domain=(i,), requires_grad=True)
        w[True] = RT.const(np.float32(1.5))
        r, done = _episode(ctx, i, t, w)
        (r * r[i, T - 1])[i, 0:T].sum(0).backward()
        w.grad[0:I].sink_udf(lambda v: out.__setitem__("g", np.asarray(v).copy()))
    ctx.compile({I: 3, T: (MAXT, done)}).execute()
    want = []
    for k in range(3):
        wt = torch.tensor(1.5, requires_grad=True)
        n = next((j + 1 for j in range(MAXT) if np.cumsum(R[k] * 1.5)[j] > 1.5), MAXT)
        r = torch.tensor(R[k, :n]) * wt
        (r * r[n - 1]).sum().backward()
        want.append(float(wt.grad))
    np.testing.assert_allclose(out["g"], want, rtol=1e-5)
