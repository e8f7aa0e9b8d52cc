"""Linear, Embedding, norms, activations, SwiGLU, Flatten and conv layers equal their
PyTorch counterparts with the same weights, forward and backward."""

from __future__ import annotations

import pytest
import torch
from nn_harness import build_and_run, close, const, leaf

from tempo.api import nn
from tempo.api.nn.activations import ActivationFunction
from tempo.api.nn.flatten import Flatten
from tempo.api.nn.init import const_init
from tempo.api.nn.swiglu import SwiGLU


def _loss_weights(shape: tuple[int, ...], seed: int = 7) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _fwd_bwd(
    tmod: torch.nn.Module, make, xs: torch.Tensor, tempo_params, torch_params, tol: float = 1e-5
) -> None:
    """Run y = module(x), loss = sum(y * r); compare y, d loss/dx and parameter grads."""
    x_t = xs.clone().requires_grad_(True)
    y_t = tmod(x_t)
    r = _loss_weights(tuple(y_t.shape))
    (y_t * r).sum().backward()

    def body():
        m = make()
        x = leaf(xs)
        y = m(x)
        (y * const(r)).sum().backward()
        return m, x, y

    run, (m, x, y) = build_and_run(0, body)
    close(run.get(y), y_t, tol)
    close(run.get(x.grad), x_t.grad, tol)
    for p, tp in zip(tempo_params(m), torch_params(tmod)):
        close(run.get(p.grad), tp.grad.reshape(p.grad.shape if False else tp.grad.shape), tol)


def test_linear() -> None:
    torch.manual_seed(0)
    tl = torch.nn.Linear(5, 3)
    _fwd_bwd(
        tl,
        lambda: nn.Linear(5, 3, w_init_fun=const_init(tl.weight), b_init_fun=const_init(tl.bias)),
        torch.randn(4, 5),
        lambda m: [m.w, m.b],
        lambda t: [t.weight, t.bias],
    )


def test_linear_on_vector_and_default_init_range() -> None:
    torch.manual_seed(1)
    tl = torch.nn.Linear(4, 1)
    _fwd_bwd(
        tl,
        lambda: nn.Linear(4, 1, w_init_fun=const_init(tl.weight), b_init_fun=const_init(tl.bias)),
        torch.randn(4),
        lambda m: [m.w],
        lambda t: [t.weight],
    )
    run, lin = build_and_run(0, lambda: nn.Linear(100, 50))
    w = run.get(lin.w)
    assert w.shape == (50, 100) and w.abs().max() <= 0.1 and w.std() > 0.04
    assert (run.get(lin.b) == 0).all()


def test_embedding() -> None:
    torch.manual_seed(2)
    te = torch.nn.Embedding(10, 4)
    idx = torch.tensor([3, 1, 3, 9])
    r = _loss_weights((4, 4))
    (te(idx) * r).sum().backward()

    def body():
        m = nn.Embedding(10, 4, w_init_fun=const_init(te.weight))
        y = m(const(idx))
        (y * const(r)).sum().backward()
        return m, y

    run, (m, y) = build_and_run(0, body)
    close(run.get(y), te(idx))
    close(run.get(m.embed_table.grad), te.weight.grad)


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(affine: bool) -> None:
    torch.manual_seed(3)
    tn = torch.nn.LayerNorm(6, elementwise_affine=affine)
    if affine:
        with torch.no_grad():
            tn.weight.normal_()
            tn.bias.normal_()
    make = (
        (lambda: nn.LayerNorm(6, w_init_fun=const_init(tn.weight), b_init_fun=const_init(tn.bias)))
        if affine
        else (lambda: nn.LayerNorm(6, elementwise_affine=False))
    )
    _fwd_bwd(
        tn,
        make,
        torch.randn(3, 6) * 3 + 1,
        lambda m: [m.w, m.b] if affine else [],
        lambda t: [t.weight, t.bias] if affine else [],
        tol=1e-4,
    )


def test_rms_norm() -> None:
    torch.manual_seed(4)
    tn = torch.nn.RMSNorm(6, eps=1e-7)
    with torch.no_grad():
        tn.weight.normal_()
    _fwd_bwd(
        tn,
        lambda: nn.RMSNorm(6, w_init_fun=const_init(tn.weight)),
        torch.randn(3, 6),
        lambda m: [m.w],
        lambda t: [t.weight],
        tol=1e-4,
    )


_TORCH_ACTS = {
    "relu": torch.nn.ReLU(),
    "sigmoid": torch.nn.Sigmoid(),
    "tanh": torch.nn.Tanh(),
    "swish": torch.nn.SiLU(),
    "softmax": torch.nn.Softmax(-1),
    "elu": torch.nn.ELU(),
    "leakyrelu": torch.nn.LeakyReLU(0.01),
    "mish": torch.nn.Mish(),
    "softplus": torch.nn.Softplus(),
}


@pytest.mark.parametrize("name", sorted(_TORCH_ACTS))
def test_activation_modules(name: str) -> None:
    xs = torch.linspace(-25, 25, 24).reshape(4, 6) + 0.1
    _fwd_bwd(
        _TORCH_ACTS[name],
        lambda: ActivationFunction.from_(name),
        xs,
        lambda m: [],
        lambda t: [],
        tol=1e-5,
    )


def test_activation_from_rejects_unknown() -> None:
    assert isinstance(ActivationFunction.from_("silu"), nn.Swish)
    assert isinstance(ActivationFunction.from_(nn.Elu), nn.Elu)
    with pytest.raises(ValueError):
        ActivationFunction.from_("gelu_typo")


def test_swiglu() -> None:
    torch.manual_seed(5)
    w, v = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)

    class TorchSwiGLU(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.silu(w(x)) * v(x)

    _fwd_bwd(
        TorchSwiGLU(),
        lambda: SwiGLU(
            4,
            3,
            w_init_fun=const_init(w.weight),
            v_init_fun=const_init(v.weight),
            b_init_fun=const_init(w.bias),
            c_init_fun=const_init(v.bias),
        ),
        torch.randn(2, 4),
        lambda m: [m.swish_linear_layer.w, m.linear_layer.b],
        lambda t: [w.weight, v.bias],
    )


def test_flatten() -> None:
    _fwd_bwd(
        torch.nn.Flatten(1, -1),
        lambda: Flatten(1, -1),
        torch.randn(2, 3, 4),
        lambda m: [],
        lambda t: [],
    )


@pytest.mark.parametrize("kind", ["conv1d", "conv2d", "conv2d_grouped", "convT2d", "conv3d"])
def test_conv_layers(kind: str) -> None:
    torch.manual_seed(6)
    if kind == "conv1d":
        tc, cls, xs = torch.nn.Conv1d(2, 3, 3, stride=2, padding=1), nn.Conv1d, torch.randn(2, 2, 7)
        kw = dict(stride=2, padding=1)
    elif kind == "conv2d":
        tc, cls, xs = torch.nn.Conv2d(2, 4, 3, dilation=2), nn.Conv2d, torch.randn(1, 2, 7, 6)
        kw = dict(dilation=2)
    elif kind == "conv2d_grouped":
        tc, cls, xs = torch.nn.Conv2d(4, 6, 2, groups=2), nn.Conv2d, torch.randn(2, 4, 5, 5)
        kw = dict(groups=2)
    elif kind == "convT2d":
        tc = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1)
        cls, xs, kw = (
            nn.ConvTransposed2d,
            torch.randn(1, 3, 4, 4),
            dict(stride=2, padding=1, output_padding=1),
        )
    else:
        tc, cls, xs = torch.nn.Conv3d(1, 2, 2), nn.Conv3d, torch.randn(1, 1, 3, 4, 3)
        kw = {}
    w = tc.weight
    b = tc.bias.reshape(-1, *([1] * (w.ndim - 2)))
    _fwd_bwd(
        tc,
        lambda: cls(
            w.shape[1] * (kw.get("groups", 1)) if kind != "convT2d" else w.shape[0],
            w.shape[0] if kind != "convT2d" else w.shape[1],
            w.shape[2:],
            w_init_fun=const_init(w),
            b_init_fun=const_init(b),
            **kw,
        ),
        xs,
        lambda m: [m.w],
        lambda t: [t.weight],
        tol=1e-4,
    )
