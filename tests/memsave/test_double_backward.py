"""Second derivatives (a gradient penalty, a Hessian-vector product) through the memsave
layers: InplaceGELU's backward is made of differentiable ops on the saved output and gives
nn.GELU's second derivative; InplaceLayerNorm's and softmax_dropout_matmul's rebuild x-hat /
the probabilities from saved values without a graph back to the input, so they must refuse
create_graph=True instead of returning a penalty gradient that leaves those paths out."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tempo import memsave


def _penalty_grad(f: Callable[..., torch.Tensor], x: torch.Tensor,
                  *extra: torch.Tensor) -> torch.Tensor:
    """d/dx ||d(w . f(x))/dx||^2: what a gradient penalty backpropagates."""
    xx = x.detach().clone().requires_grad_(True)
    y = f(xx, *extra)
    w = torch.linspace(-1, 1, y.numel(), dtype=y.dtype).reshape(y.shape)
    (g,) = torch.autograd.grad((y * w).sum(), xx, create_graph=True)
    (h,) = torch.autograd.grad((g * g).sum(), xx)
    return h


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-12), (torch.float32, 5e-6)])
def test_gelu_second_derivative_equals_the_stock_layer(approximate: str, dtype: torch.dtype,
                                                        tol: float) -> None:
    x = torch.linspace(-4, 4, 401, dtype=dtype).reshape(1, -1)
    got = _penalty_grad(memsave.InplaceGELU(approximate), x)
    want = _penalty_grad(nn.GELU(approximate), x)
    assert torch.allclose(got, want, atol=tol, rtol=0), (got - want).abs().max()


def _layer_norm(z: torch.Tensor, g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return memsave.inplace_layer_norm(z, (8,), g, b, 1e-5)


def _attention(s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return memsave.softmax_dropout_matmul(s, v, 0.0)


def test_layer_norm_refuses_a_second_derivative() -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 8, dtype=torch.float64)
    g, b = torch.rand(8, dtype=torch.float64) + 0.5, torch.randn(8, dtype=torch.float64)
    # the stock layer's penalty gradient is far from 0: leaving paths out is an O(1) error
    assert _penalty_grad(lambda z: F.layer_norm(z, (8,), g, b, 1e-5), x).abs().max() > 1e-3
    with pytest.raises(RuntimeError, match="first-order backward only.*nn.LayerNorm"):
        _penalty_grad(_layer_norm, x, g, b)


def test_attention_refuses_a_second_derivative_even_inside_a_sum() -> None:
    torch.manual_seed(0)
    s = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    v = torch.randn(8, 5, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="first-order backward only"):
        _penalty_grad(_attention, s, v)
    # a loss plus a penalty: the old code dropped the penalty's gradient silently
    out = _attention(s, v)
    with pytest.raises(RuntimeError, match="first-order backward only"):
        (g,) = torch.autograd.grad(out.square().sum(), s, create_graph=True)
        (out.sum() + g.square().sum()).backward()


def test_first_order_use_is_unchanged() -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    g, b = torch.rand(8, dtype=torch.float64) + 0.5, torch.randn(8, dtype=torch.float64)
    (got,) = torch.autograd.grad(_layer_norm(x, g, b).square().sum(), x)
    (want,) = torch.autograd.grad(F.layer_norm(x, (8,), g, b, 1e-5).square().sum(), x)
    assert torch.allclose(got, want, atol=1e-10)
