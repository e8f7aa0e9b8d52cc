"""SoftmaxDropoutMatmul against stock softmax -> P*mask/(1-p) -> matmul autograd."""

import pytest
import torch

from tempo.memsave import SoftmaxDropoutMatmul, softmax_dropout_matmul
from tempo.memsave.memory import record_saved


def stock(scores, v, p, keep):
    probs = torch.softmax(scores, dim=-1)
    if keep is not None:
        probs = probs * keep.to(probs.dtype) * (1.0 / (1.0 - p))
    return probs @ v


def grads(fn, scores, v, dout):
    s = scores.detach().clone().requires_grad_()
    vv = v.detach().clone().requires_grad_()
    out = fn(s, vv)
    out.backward(dout)
    return out.detach(), s.grad, vv.grad


def make(b=2, a=3, sq=5, sk=7, d=4, dtype=torch.float32, p=0.3, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(b, a, sq, sk, generator=g, dtype=dtype) * 2
    v = torch.randn(b, a, sk, d, generator=g, dtype=dtype)
    keep = torch.rand(b, a, sq, sk, generator=g) >= p
    dout = torch.randn(b, a, sq, d, generator=g, dtype=dtype)
    return scores, v, keep, dout


def test_gradcheck_fp64_with_fixed_mask() -> None:
    scores, v, keep, _ = make(dtype=torch.float64)
    for fmt in ("bit", "byte"):
        def fn(s, vv, fmt=fmt):
            return softmax_dropout_matmul(s, vv, 0.3, True, keep, mask_format=fmt)

        assert torch.autograd.gradcheck(fn, (scores.requires_grad_(), v.requires_grad_()))


@pytest.mark.parametrize("fmt", ["bit", "byte"])
def test_fp32_matches_stock_same_mask(fmt: str) -> None:
    scores, v, keep, dout = make(b=3, a=4, sq=33, sk=33, d=16)
    o0, ds0, dv0 = grads(lambda s, vv: stock(s, vv, 0.3, keep), scores, v, dout)
    o1, ds1, dv1 = grads(
        lambda s, vv: softmax_dropout_matmul(s, vv, 0.3, True, keep, mask_format=fmt),
        scores, v, dout,
    )
    assert torch.equal(o0, o1)
    torch.testing.assert_close(ds1, ds0, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(dv1, dv0, atol=1e-5, rtol=1e-4)


def test_chunked_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    from tempo.memsave import chunks

    scores, v, keep, dout = make(b=2, a=3, sq=5, sk=7)  # 35 elements per row: bytes misalign
    ref = grads(lambda s, vv: softmax_dropout_matmul(s, vv, 0.3, True, keep), scores, v, dout)
    monkeypatch.setattr(chunks, "rows_per_chunk", lambda *_: 1)
    got = grads(lambda s, vv: softmax_dropout_matmul(s, vv, 0.3, True, keep), scores, v, dout)
    for a, b in zip(ref, got):
        assert torch.equal(a, b)


def test_p_zero_and_eval_use_no_mask() -> None:
    scores, v, _, dout = make()
    ref = grads(lambda s, vv: stock(s, vv, 0.0, None), scores, v, dout)
    m = SoftmaxDropoutMatmul(p=0.5).eval()
    for fn in (lambda s, vv: softmax_dropout_matmul(s, vv, 0.0), lambda s, vv: m(s, vv)):
        for a, b in zip(ref, grads(fn, scores, v, dout)):
            torch.testing.assert_close(a, b)


def test_generator_reproducible_and_rate() -> None:
    scores, v, _, _ = make(sq=64, sk=64)
    outs = [
        softmax_dropout_matmul(scores, v, 0.25, True, generator=torch.Generator().manual_seed(7))
        for _ in range(2)
    ]
    assert torch.equal(outs[0], outs[1])
    keep = torch.rand(scores.shape, generator=torch.Generator().manual_seed(7)) >= 0.25
    torch.testing.assert_close(outs[0], stock(scores, v, 0.25, keep))
    assert abs(keep.float().mean().item() - 0.75) < 0.02


def test_fully_masked_row_is_nan_in_both() -> None:
    scores, v, keep, dout = make()
    scores[0, 0, 1] = float("-inf")
    o0 = stock(scores, v, 0.3, keep)
    o1 = softmax_dropout_matmul(scores, v, 0.3, True, keep)
    assert torch.isnan(o0[0, 0, 1]).all() and torch.isnan(o1[0, 0, 1]).all()
    assert torch.equal(torch.isnan(o0), torch.isnan(o1))


def test_saves_probs_mask_and_v_only() -> None:
    scores, v, keep, _ = make(b=2, a=2, sq=16, sk=16, d=8)
    s = scores.clone().requires_grad_()
    vv = v.clone().requires_grad_()
    with record_saved([s]) as rec:
        out = softmax_dropout_matmul(s, vv, 0.3, True, keep)
    n = scores.numel()
    assert rec.total_bytes == 4 * n + n // 8 + 4 * v.numel()  # P + bits + V, no D
    assert not rec.contains(s)
    assert not any(isinstance(x, torch.Tensor) for x in vars(out.grad_fn).values())
    with pytest.raises(ValueError):
        softmax_dropout_matmul(s, vv, 1.0)


def test_fused_attention_probs_matmul_takes_memsave_md_positional_signature() -> None:
    """MEMSAVE.md 7.1 names `fused_attention_probs_matmul(scores, v, p, mask=None,
    generator=None)`: the fourth positional argument is the keep-mask (as an alias of
    softmax_dropout_matmul it was the training flag: 'Boolean value of Tensor ... is
    ambiguous'); the generator is the fifth; eval mode is keyword-only."""
    from tempo.memsave import fused_attention_probs_matmul

    scores, v, keep, dout = make()
    def fused(s, vv):  # type: ignore[no-untyped-def]
        return fused_attention_probs_matmul(s, vv, 0.3, keep)

    out, ds, dv = grads(fused, scores, v, dout)
    ref = grads(lambda s, vv: stock(s, vv, 0.3, keep), scores, v, dout)
    for a, b in zip((out, ds, dv), ref):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    drawn = fused_attention_probs_matmul(scores, v, 0.3, None, g1)
    redrawn = stock(scores, v, 0.3, torch.rand(scores.shape, generator=g2) >= 0.3)
    torch.testing.assert_close(drawn, redrawn, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(fused_attention_probs_matmul(scores, v, 0.3, keep, training=False),
                               stock(scores, v, 0.3, None), rtol=1e-5, atol=1e-6)
