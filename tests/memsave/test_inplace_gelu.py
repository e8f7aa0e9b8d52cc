"""InplaceGELU against stock F.gelu / autograd (the independent reference)."""

import pytest
import torch
import torch.nn.functional as F

from tempo.memsave import InplaceGELU, gelu_inverse, inplace_gelu
from tempo.memsave.gelu import CONSTANTS
from tempo.memsave.memory import record_saved

FORMS = ["none", "tanh"]


def stock_grad(x: torch.Tensor, g: torch.Tensor, approximate: str) -> torch.Tensor:
    x = x.detach().clone().requires_grad_()
    F.gelu(x, approximate=approximate).backward(g)
    return x.grad


def ours(x: torch.Tensor, g: torch.Tensor, approximate: str, fmt: str = "bit"):
    x = x.detach().clone().requires_grad_()
    y = inplace_gelu(x, approximate, fmt)
    y.backward(g)
    return y.detach(), x.grad


@pytest.mark.parametrize("approximate", FORMS)
def test_gradcheck_fp64(approximate: str) -> None:
    x = (torch.randn(6, 7, dtype=torch.float64) * 2).requires_grad_()
    k = CONSTANTS[approximate]
    # keep away from x_min, where finite differences straddle the branch bit
    x.data[(x.data - k.x_min).abs() < 1e-3] += 0.01
    assert torch.autograd.gradcheck(lambda t: inplace_gelu(t, approximate), (x,))


@pytest.mark.parametrize("approximate", FORMS)
@pytest.mark.parametrize("fmt", ["bit", "byte"])
def test_fp32_matches_stock_away_from_minimum(approximate: str, fmt: str) -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.cat([torch.randn(50_000, generator=gen) * 3, torch.linspace(-10, 10, 30_001)])
    x = x[(x - CONSTANTS[approximate].x_min).abs() > 0.05]
    g = torch.randn(x.shape, generator=gen)
    y, gx = ours(x, g, approximate, fmt)
    assert torch.equal(y, F.gelu(x, approximate=approximate))  # forward is bit-identical
    torch.testing.assert_close(gx, stock_grad(x, g, approximate), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("approximate", FORMS)
def test_fp32_floor_near_minimum(approximate: str) -> None:
    """Output-based backward is conditioned by y_min: worst case ~1e-4 (MEMSAVE.md 1.4)."""
    k = CONSTANTS[approximate]
    x = torch.linspace(k.x_min - 0.05, k.x_min + 0.05, 20_001)
    x = torch.cat([x, torch.tensor([k.x_min])])
    g = torch.ones_like(x)
    _, gx = ours(x, g, approximate)
    err = (gx - stock_grad(x, g, approximate)).abs().max().item()
    assert err <= 2e-4
    assert err > 1e-6  # the floor is real: if this fails the test no longer documents it


# fp16: 6.7e-3 (erf) / 7.1e-3 (tanh: y rounds onto y_min at x = -0.736); bf16: 1.6e-2.
@pytest.mark.parametrize("dtype,floor", [(torch.float16, 7.5e-3), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("approximate", FORMS)
def test_half_precision_floor(dtype: torch.dtype, floor: float, approximate: str) -> None:
    x = torch.linspace(-6, 6, 40_001).to(dtype)
    g = torch.ones_like(x)
    y, gx = ours(x, g, approximate)
    assert torch.equal(y, F.gelu(x, approximate=approximate))
    exact = stock_grad(x.double(), g.double(), approximate)
    assert (gx.double() - exact).abs().max().item() <= floor


def test_inverse_roundtrip_fp64() -> None:
    # below -5, F.gelu's own fp64 output loses digits to 1 + erf cancellation
    x = torch.linspace(-5, 8, 100_001, dtype=torch.float64)
    for approximate in FORMS:
        y = F.gelu(x, approximate=approximate)
        xr = gelu_inverse(y, x >= CONSTANTS[approximate].x_min, approximate)
        far = (x - CONSTANTS[approximate].x_min).abs() > 1e-3
        torch.testing.assert_close(xr[far], x[far], atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("approximate", FORMS)
def test_special_values(approximate: str) -> None:
    x = torch.tensor(
        [0.0, -50.0, float("inf"), float("nan"), CONSTANTS[approximate].x_min, 30.0, -float("inf")]
    )
    g = torch.ones_like(x)
    _, gx = ours(x, g, approximate)
    ref = stock_grad(x, g, approximate)
    assert gx[0].item() == 0.5 and gx[1].item() == 0.0  # y == 0 on both branches
    assert torch.isnan(gx[3]) and torch.isnan(ref[3])
    assert torch.isnan(gx[2]) == torch.isnan(ref[2])  # stock gives NaN at +inf; so do we
    assert torch.isnan(gx[6]) and torch.isnan(ref[6])  # gelu(-inf) is NaN in both
    torch.testing.assert_close(gx[[0, 1, 4, 5]], ref[[0, 1, 4, 5]], atol=2e-4, rtol=0)


def test_empty_noncontiguous_odd_sizes() -> None:
    assert ours(torch.empty(0, 3), torch.empty(0, 3), "none")[1].shape == (0, 3)
    base = torch.randn(9, 13)
    x = base.t()  # non-contiguous, odd numel
    g = torch.randn(13, 9)
    y, gx = ours(x, g, "none")
    assert torch.equal(y, F.gelu(x))
    torch.testing.assert_close(gx, stock_grad(x, g, "none"), atol=2e-4, rtol=1e-4)


def test_chunked_backward_matches_one_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    from tempo.memsave import chunks

    x = torch.randn(4099)
    g = torch.randn(4099)
    _, full = ours(x, g, "none")
    monkeypatch.setattr(chunks, "ELEMENT_CHUNK", 1000)  # not a multiple of 8
    _, chunked = ours(x, g, "none")
    assert torch.equal(full, chunked)


def test_saves_no_input_and_no_tensor_on_ctx() -> None:
    x = torch.randn(64, 33).requires_grad_()
    h = x * 2  # the layer input, as a Linear output would be
    with record_saved([x]) as rec:
        y = InplaceGELU()(h)
    assert not rec.contains(h)
    assert rec.contains(y)
    assert rec.total_bytes == y.numel() * 4 + (y.numel() + 7) // 8  # output + packed bits
    assert not any(isinstance(v, torch.Tensor) for v in vars(y.grad_fn).values())


def test_module_eval_and_repr() -> None:
    m = InplaceGELU("tanh")
    x = torch.randn(10)
    assert torch.equal(m(x), F.gelu(x, approximate="tanh"))
    assert "tanh" in repr(m)
    with pytest.raises(ValueError):
        InplaceGELU("cubic")
