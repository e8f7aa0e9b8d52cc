"""InplaceLayerNorm against stock nn.LayerNorm / F.layer_norm autograd."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tempo.memsave import InplaceLayerNorm, inplace_layer_norm
from tempo.memsave import layernorm as ln_mod
from tempo.memsave.memory import record_saved


def gamma(shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    w = torch.empty(shape, dtype=dtype).uniform_(0.5, 1.5, generator=g)
    w.view(-1)[::3] *= -1  # negative gammas are fine
    return w


def run_pair(x, shape, w, b, eps=1e-5, dy=None):
    """(y, dx, dw, db) from stock F.layer_norm and from the in-place version."""
    outs = []
    for fn in (F.layer_norm, inplace_layer_norm):
        xx = x.detach().clone().requires_grad_()
        ww = w.detach().clone().requires_grad_() if w is not None else None
        bb = b.detach().clone().requires_grad_() if b is not None else None
        y = fn(xx, shape, ww, bb, eps)
        y.backward(dy if dy is not None else torch.ones_like(y))
        outs.append((y.detach(), xx.grad, ww.grad if ww is not None else None,
                     bb.grad if bb is not None else None))
    return outs


def test_gradcheck_fp64() -> None:
    x = torch.randn(5, 3, 8, dtype=torch.float64, requires_grad=True)
    w = gamma((8,), dtype=torch.float64).requires_grad_()
    b = torch.randn(8, dtype=torch.float64, requires_grad=True)
    fn = lambda *a: inplace_layer_norm(a[0], (8,), a[1], a[2])  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x, w, b))
    x2 = torch.randn(4, 3, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: inplace_layer_norm(t, (3, 5)), (x2,))


@pytest.mark.parametrize("shape", [(64,), (4, 16)])
def test_fp32_matches_stock(shape) -> None:
    x = torch.randn(6, 33, *shape) * 3 + 1
    w, b = gamma(shape), torch.randn(shape)
    dy = torch.randn(x.shape)
    (y0, dx0, dw0, db0), (y1, dx1, dw1, db1) = run_pair(x, shape, w, b, 1e-12, dy)
    assert torch.equal(y0, y1)
    torch.testing.assert_close(dx1, dx0, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(dw1, dw0, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(db1, db0, atol=1e-4, rtol=1e-4)


def test_no_affine_and_no_bias_and_noncontiguous_dy() -> None:
    x = torch.randn(7, 40)
    dy = torch.randn(40, 7).t()  # non-contiguous upstream gradient
    (y0, dx0, _, _), (y1, dx1, _, _) = run_pair(x, (40,), None, None, dy=dy)
    assert torch.equal(y0, y1)
    torch.testing.assert_close(dx1, dx0, atol=1e-5, rtol=1e-4)
    w = gamma((40,))
    (y0, dx0, dw0, _), (y1, dx1, dw1, _) = run_pair(x, (40,), w, None, dy=dy)
    torch.testing.assert_close(dx1, dx0, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(dw1, dw0, atol=1e-5, rtol=1e-4)


def test_zero_gamma_falls_back_to_saving_input() -> None:
    x = torch.randn(9, 16)
    w = gamma((16,))
    w[3] = 0.0
    before = ln_mod.FALLBACK_CALLS[0]
    (y0, dx0, dw0, db0), (y1, dx1, dw1, db1) = run_pair(x, (16,), w, torch.randn(16))
    assert ln_mod.FALLBACK_CALLS[0] == before + 1
    assert torch.isfinite(dx1).all() and torch.isfinite(dw1).all()
    torch.testing.assert_close(dx1, dx0)
    torch.testing.assert_close(dw1, dw0)  # d gamma_3 needs xhat_3: only the fallback has it


def test_tiny_gamma_without_fallback_would_be_wrong() -> None:
    """The guard matters: with the threshold forced to 0 the recovered xhat is garbage."""
    x = torch.randn(9, 16) * 100
    w = gamma((16,))
    w[3] = 1e-30
    xx = x.clone().requires_grad_()
    ww = w.clone().requires_grad_()
    inplace_layer_norm(xx, (16,), ww, torch.randn(16), 1e-5, 0.0).sum().backward()
    ref = w.clone().requires_grad_()
    F.layer_norm(x, (16,), ref, torch.randn(16)).sum().backward()
    assert not torch.allclose(ww.grad, ref.grad, atol=1e-3)


def test_empty_batch() -> None:
    (y0, dx0, dw0, _), (y1, dx1, dw1, _) = run_pair(torch.randn(0, 8), (8,), gamma((8,)), None)
    assert dx1.shape == (0, 8) and torch.equal(dw1, torch.zeros(8))


def test_chunked_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from tempo.memsave import chunks

    monkeypatch.setattr(chunks, "ELEMENT_CHUNK", 50)  # 1 row of 32 per chunk
    x, w, b = torch.randn(11, 32), gamma((32,)), torch.randn(32)
    (_, dx0, dw0, db0), (_, dx1, dw1, db1) = run_pair(x, (32,), w, b)
    torch.testing.assert_close(dx1, dx0, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(dw1, dw0, atol=1e-5, rtol=1e-4)


def test_module_saves_output_and_fp32_rstd_not_input() -> None:
    stock = nn.LayerNorm(24, eps=1e-12)
    with torch.no_grad():
        stock.weight.copy_(gamma((24,)))
    m = InplaceLayerNorm.from_layer_norm(stock)
    assert m.weight is stock.weight and m.eps == 1e-12
    x0 = torch.randn(5, 24, requires_grad=True)
    h = x0 * 1.5
    with record_saved([x0, *m.parameters()]) as rec:
        y = m(h)
    assert not rec.contains(h) and rec.contains(y)
    assert rec.total_bytes == y.numel() * 4 + 5 * 4  # y + fp32 rstd
    assert not any(isinstance(v, torch.Tensor) for v in vars(y.grad_fn).values())
    torch.testing.assert_close(y, stock(h), rtol=0, atol=0)


def test_half_rstd_kept_in_fp32() -> None:
    """rstd of a near-constant bf16 row overflows half types; it must be saved as fp32."""
    x = (1.0 + torch.randn(4, 16) * 1e-3).to(torch.bfloat16).requires_grad_()
    with record_saved() as rec:
        y = inplace_layer_norm(x, (16,), None, None, 1e-12)
    assert ((4, 1), torch.float32) in rec.tensors
    y.backward(torch.ones_like(y))
    assert torch.isfinite(x.grad.float()).all()
