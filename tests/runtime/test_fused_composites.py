"""Fused composites (softmax, log-softmax, RMS norm, layer norm) are one primitive each,
run by the backend's fused kernel, with values and gradients equal to torch eager on
torch, jax and numpy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn import LayerNorm, RMSNorm
from tempo.core import ops
from tempo.core.configs import ExecutionConfig

RNG = np.random.default_rng(7)
X = (RNG.standard_normal((3, 4, 6)) * 3).astype(np.float32)
C = RNG.standard_normal((3, 4, 6)).astype(np.float32)  # loss weights: non-uniform grads


def _torch_ref(kind: str, x: torch.Tensor) -> torch.Tensor:
    if kind == "softmax":
        return torch.softmax(x, 1)
    if kind == "log_softmax":
        return torch.log_softmax(x, -1)
    if kind == "rms_norm":
        return torch.nn.functional.rms_norm(x, (4, 6), eps=1e-6)
    return torch.nn.functional.layer_norm(x, (6,), eps=1e-5)


def _tempo(kind: str, x: RT) -> RT:
    if kind == "softmax":
        return x.softmax(1)
    if kind == "log_softmax":
        return x.log_softmax(-1)
    if kind == "rms_norm":
        return RMSNorm((4, 6), eps=1e-6, elementwise_affine=False)(x)
    return LayerNorm(6, eps=1e-5, elementwise_affine=False)(x)


KINDS = ["softmax", "log_softmax", "rms_norm", "layer_norm"]


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
@pytest.mark.parametrize("kind", KINDS)
def test_fused_values_and_grads_match_torch(kind: str, backend: str, tmp_path) -> None:  # noqa: ANN001
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend,
                              path=str(tmp_path) + "/")
    ctx = TempoContext(cfg, num_dims=0)
    with ctx:
        x = RT.const(X, requires_grad=True)
        y = _tempo(kind, x)
        (y * RT.const(C)).sum().backward()
    fused = [op for op in ctx.sdg.ops.values() if isinstance(op, ops.SoftmaxOp | ops.NormOp)]
    assert len(fused) == 1, "the composite is recorded as one fused primitive"
    exe = ctx.compile({})
    exe.execute()
    got_y = exe.get_spatial_tensor_torch(y.tensor_id)
    got_g = exe.get_spatial_tensor_torch(x.grad.tensor_id)

    tx = torch.from_numpy(X).requires_grad_(True)
    ty = _torch_ref(kind, tx)
    (ty * torch.from_numpy(C)).sum().backward()
    torch.testing.assert_close(got_y, ty.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got_g, tx.grad, rtol=1e-4, atol=1e-5)


def test_unstable_softmax_stays_the_composite(tmp_path) -> None:  # noqa: ANN001
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), path=str(tmp_path) + "/")
    ctx = TempoContext(cfg, num_dims=0)
    with ctx:
        y = RT.const(X).softmax(-1, stable=False)
    assert not any(isinstance(op, ops.SoftmaxOp) for op in ctx.sdg.ops.values())
    exe = ctx.compile({})
    exe.execute()
    torch.testing.assert_close(exe.get_spatial_tensor_torch(y.tensor_id),
                               torch.softmax(torch.from_numpy(X), -1))
