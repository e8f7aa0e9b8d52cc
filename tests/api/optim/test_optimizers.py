"""Optimizers track torch.optim step by step: update rules on a supplied gradient for 50
iterations, and linear-regression training through `backward()`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn import Linear
from tempo.api.nn.init import const_init
from tempo.api.optim.optim import LAMB, SGD, Adam, AdamW
from tempo.core.configs import ExecutionConfig

N = 50
W0 = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
TGT = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))


def _lamb_ref(p: torch.Tensor, lr: float, b1: float, b2: float, eps: float, wd: float) -> list:
    """A plain LAMB in torch (no torch.optim version exists)."""
    p, m, v, out = p.clone(), torch.zeros_like(p), torch.zeros_like(p), []
    for k in range(1, N + 1):
        out.append(p.clone())
        g = 2 * (p - TGT)
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        r = (m / (1 - b1**k)) / ((v.sqrt() / (1 - b2**k) ** 0.5) + eps) + wd * p
        trust = p.norm() / r.norm()
        p = p - lr * trust * r
    return out


CASES: dict[str, tuple[Callable[[list], Any], Callable[[list], Any] | None]] = {
    "sgd": (lambda ps: SGD(ps, lr=0.05), lambda ps: torch.optim.SGD(ps, lr=0.05)),
    "sgd_momentum_wd": (
        lambda ps: SGD(ps, lr=0.02, momentum=0.9, weight_decay=0.1),
        lambda ps: torch.optim.SGD(ps, lr=0.02, momentum=0.9, weight_decay=0.1),
    ),
    "sgd_nesterov": (
        lambda ps: SGD(ps, lr=0.02, momentum=0.8, nesterov=True),
        lambda ps: torch.optim.SGD(ps, lr=0.02, momentum=0.8, nesterov=True),
    ),
    "adam": (lambda ps: Adam(ps, lr=0.05), lambda ps: torch.optim.Adam(ps, lr=0.05)),
    "adamw": (
        lambda ps: AdamW(ps, lr=0.05, wd=0.1),
        lambda ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.1),
    ),
    "adam_clipped": (
        lambda ps: Adam(ps, lr=0.05, max_norm=0.5),
        lambda ps: torch.optim.Adam(ps, lr=0.05),
    ),
    "lamb": (lambda ps: LAMB(ps, lr=0.05, wd=0.01), None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_update_rules_track_torch_for_50_steps(name: str) -> None:
    make, make_torch = CASES[name]
    ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=1)
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        p = Linear(3, 4, bias=False, domain=(i,), w_init_fun=const_init(W0)).w
        p.grad = (p - RT.const(TGT.numpy())) * 2.0  # d/dp sum((p - tgt)^2)
        make([p]).step()
    exe = ctx.compile({I: N})
    exe.execute()
    got = exe.get_spatial_tensor_torch(p.tensor_id, (slice(0, N),))
    if make_torch is None:
        ref = _lamb_ref(W0, 0.05, 0.9, 0.999, 1e-6, 0.01)
    else:
        tp = W0.clone().requires_grad_(True)
        opt, ref = make_torch([tp]), []
        for _ in range(N):
            ref.append(tp.detach().clone())
            opt.zero_grad()
            ((tp - TGT) ** 2).sum().backward()
            if name == "adam_clipped":
                torch.nn.utils.clip_grad_norm_([tp], 0.5)
            opt.step()
    err = (got - torch.stack(ref)).abs().max().item()
    assert err < 1e-4, err
    assert (got[-1] - got[0]).abs().max() > 0.1  # it did move


@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_linear_regression_training_through_backward(name: str) -> None:
    g = torch.Generator().manual_seed(2)
    X, Y = torch.randn(16, 3, generator=g), torch.randn(16, 2, generator=g)
    tl = torch.nn.Linear(3, 2)
    ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=1)
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        net = Linear(
            3, 2, domain=(i,), w_init_fun=const_init(tl.weight), b_init_fun=const_init(tl.bias)
        )
        loss = ((net(RT.const(X.numpy())) - RT.const(Y.numpy())) ** 2).mean()
        loss.backward()
        (
            SGD(net.parameters, net.buffers, lr=0.1)
            if name == "sgd"
            else Adam(net.parameters, net.buffers, lr=0.05)
        ).step()
    exe = ctx.compile({I: N})
    exe.execute()
    got = exe.get_spatial_tensor_torch(loss.tensor_id, (slice(0, N),))
    opt = (
        torch.optim.SGD(tl.parameters(), lr=0.1)
        if name == "sgd"
        else torch.optim.Adam(tl.parameters(), lr=0.05)
    )
    ref = []
    for _ in range(N):
        opt.zero_grad()
        lt = ((tl(X) - Y) ** 2).mean()
        ref.append(lt.item())
        lt.backward()
        opt.step()
    np.testing.assert_allclose(got.numpy(), np.array(ref), rtol=1e-4, atol=1e-5)
    assert ref[-1] < ref[0] * 0.9


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
@pytest.mark.parametrize("name", ["adam", "adamw", "lamb"])
def test_float64_parameters_update_in_float64(backend: str, name: str) -> None:
    """Adam's bias corrections 1 - b^step were float32 whatever the parameters' dtype: a
    float64 user's trajectory drifted ~1e-6 from torch.optim in float64 (accept5b b12).
    They now follow the parameters (float64 here): within 1e-12 of torch for 20 steps."""
    import dataclasses

    from tempo.core.dtype import dtypes

    n = 20
    w0 = W0.double()
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend)
    ctx = TempoContext(cfg, num_dims=1)
    ((i, I),) = ctx.variables_and_bounds
    make = {"adam": lambda ps: Adam(ps, lr=0.05), "adamw": lambda ps: AdamW(ps, lr=0.05, wd=0.1),
            "lamb": lambda ps: LAMB(ps, lr=0.05, wd=0.01)}[name]
    with ctx:
        p = Linear(3, 4, bias=False, dtype=dtypes.float64, domain=(i,),
                   w_init_fun=const_init(w0)).w
        p.grad = (p - RT.const(TGT.double().numpy())) * 2.0
        make([p]).step()
    exe = ctx.compile({I: n})
    exe.execute()
    got = exe.get_spatial_tensor_torch(p.tensor_id, (slice(0, n),))
    assert got.dtype == torch.float64
    if name == "lamb":
        ref = torch.stack(_lamb_ref(w0, 0.05, 0.9, 0.999, 1e-6, 0.01)[:n])
    else:
        tp = w0.clone().requires_grad_(True)
        opt = (torch.optim.Adam([tp], lr=0.05) if name == "adam"
               else torch.optim.AdamW([tp], lr=0.05, weight_decay=0.1))
        out = []
        for _ in range(n):
            out.append(tp.detach().clone())
            opt.zero_grad()
            ((tp - TGT.double()) ** 2).sum().backward()
            opt.step()
        ref = torch.stack(out)
    err = (got - ref).abs().max().item()
    assert err < 1e-12, err


@pytest.mark.parametrize("name", ["sgd_momentum", "adam"])
def test_float16_layers_train(name: str) -> None:
    """Linear(dtype=float16) had float32 weights (its default init's U(-a, a) was promoted
    by a Python float, API §5), and SGD/Adam on float16 parameters raised DTypeError
    "has dtype float16, but this definition gives it a value of dtype float32" at step()
    (accept5b): the update and the moments were float32. Now every parameter and state is
    float16, as torch.optim keeps it; the losses track torch in float32 from the same
    float16 weights within float16 precision."""
    from tempo.core.dtype import dtypes

    g = torch.Generator().manual_seed(3)
    X, Y = torch.randn(8, 3, generator=g), torch.randn(8, 2, generator=g)
    ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=1)
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        net = Linear(3, 2, dtype=dtypes.float16, domain=(i,))
        assert [p.dtype for p in net.parameters] == [dtypes.float16, dtypes.float16]
        loss = ((net(RT.const(X.half().numpy())) - RT.const(Y.half().numpy())) ** 2).mean()
        loss.backward()
        opt = (SGD(net.parameters, net.buffers, lr=0.1, momentum=0.9) if name == "sgd_momentum"
               else Adam(net.parameters, net.buffers, lr=0.05))
        opt.step()
    exe = ctx.compile({I: 10})
    exe.execute()
    got = exe.get_spatial_tensor_torch(loss.tensor_id, (slice(0, 10),))
    w0 = exe.get_spatial_tensor_torch(net.w.tensor_id, (0,))
    assert w0.dtype == torch.float16
    tl = torch.nn.Linear(3, 2)
    with torch.no_grad():
        tl.weight.copy_(w0.float())
        tl.bias.zero_()
    opt_t = (torch.optim.SGD(tl.parameters(), lr=0.1, momentum=0.9) if name == "sgd_momentum"
             else torch.optim.Adam(tl.parameters(), lr=0.05))
    ref = []
    for _ in range(10):
        lt = ((tl(X.half().float()) - Y.half().float()) ** 2).mean()
        ref.append(lt.item())
        opt_t.zero_grad()
        lt.backward()
        opt_t.step()
    np.testing.assert_allclose(got.float().numpy(), np.array(ref), rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("backend", ["torch", "numpy", "jax"])
def test_bfloat16_linear_adam_tracks_torch_bfloat16(backend: str) -> None:
    """Linear(dtype=bfloat16) trained by Adam (there was no dtypes.bfloat16: AttributeError):
    parameters, gradients and Adam's moments stay bfloat16 (torch.optim keeps state in the
    parameter's dtype); the loss of 6 steps and the weights after 5 updates track
    torch.nn.Linear in bfloat16 under torch.optim.Adam to bfloat16 precision (the two round
    the update arithmetic at different places: ours in float32, then once to bfloat16)."""
    from tempo.core.dtype import dtypes

    bf = torch.bfloat16
    g = torch.Generator().manual_seed(5)
    X, Y = torch.randn(8, 3, generator=g).to(bf), torch.randn(8, 2, generator=g).to(bf)
    cfg = ExecutionConfig.test_cfg()
    cfg.backend = backend
    ctx = TempoContext(cfg, num_dims=1)
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        net = Linear(3, 2, dtype=dtypes.bfloat16, domain=(i,))
        loss = ((net(RT.const(X)) - RT.const(Y)) ** 2).mean()
        loss.backward()
        opt = Adam(net.parameters, net.buffers, lr=0.05)
        opt.step()
        assert {p.dtype for p in net.parameters} == {dtypes.bfloat16}
        assert loss.dtype == dtypes.bfloat16
    exe = ctx.compile({I: 6})
    exe.execute()
    got = exe.get_spatial_tensor_torch(loss.tensor_id, (slice(0, 6),))
    w0 = exe.get_spatial_tensor_torch(net.w.tensor_id, (0,))
    b0 = exe.get_spatial_tensor_torch(net.b.tensor_id, (0,))
    w5 = exe.get_spatial_tensor_torch(net.w.tensor_id, (5,))
    assert got.dtype == w0.dtype == w5.dtype == bf
    tl = torch.nn.Linear(3, 2, dtype=bf)  # weight (out, in), as ours
    with torch.no_grad():
        tl.weight.copy_(w0)
        tl.bias.copy_(b0)
    opt_t = torch.optim.Adam(tl.parameters(), lr=0.05, foreach=False)
    ref, ws = [], []
    for _ in range(6):
        ws.append(tl.weight.detach().clone())
        lt = ((tl(X) - Y) ** 2).mean()
        ref.append(lt.detach())
        opt_t.zero_grad()
        lt.backward()
        opt_t.step()
    assert opt_t.state[tl.weight]["exp_avg"].dtype == bf
    # measured: losses within one bfloat16 ulp (0.0078 at 1..2), weights within 0.002
    # after 5 updates that moved them by 0.25
    torch.testing.assert_close(got, torch.stack(ref), rtol=1e-2, atol=0)
    assert ref[-1] < ref[0] and got[-1] < got[0]
    assert (w5.float() - w0.float()).abs().max() > 0.2
    torch.testing.assert_close(w5, ws[5], rtol=0, atol=4e-3)  # after 5 updates
