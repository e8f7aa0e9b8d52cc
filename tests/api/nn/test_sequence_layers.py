"""Attention (causal, window, custom pattern, GQA, RoPE), RoPE with llama3 scaling and the
recurrent cells match PyTorch references over a time dimension."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from nn_harness import build_and_run, close, const, leaf

from tempo.api import RecurrentTensor as RT
from tempo.api.nn import MultiHeadAttention
from tempo.api.nn.init import const_init
from tempo.api.nn.rnn import GRUCell, LSTMCell
from tempo.api.nn.rope import RopeScalingParams, RotaryPositionalEmbeddings, rope_frequencies
from tempo.core import index_expr as ie

T, E = 6, 8


def _seq_input(t: ie.Symbol, xs: torch.Tensor) -> RT:
    return RT.source_with_ts_udf(
        lambda ts: xs[ts[t]].clone(), (xs.shape[-1],), "float32", domain=(t,)
    )


def _rope_ref(x: torch.Tensor, freqs: np.ndarray) -> torch.Tensor:
    """torchtune's interleaved RoPE for x of shape (T, H, D)."""
    ang = torch.arange(x.shape[0], dtype=torch.float64)[:, None] * torch.tensor(freqs)[None]
    cos, sin = ang.cos()[:, None], ang.sin()[:, None]
    xp = x.double().reshape(*x.shape[:-1], -1, 2)
    a, b = xp[..., 0], xp[..., 1]
    return torch.stack([a * cos - b * sin, b * cos + a * sin], -1).reshape(x.shape).float()


def _attn_ref(
    xs: torch.Tensor,
    ws: list[torch.Tensor],
    h: int,
    kv: int,
    mask: torch.Tensor,
    rope: np.ndarray | None,
) -> torch.Tensor:
    hd = E // h
    q = (xs @ ws[0].T).reshape(T, h, hd)
    k = (xs @ ws[1].T).reshape(T, kv, hd)
    v = (xs @ ws[2].T).reshape(T, kv, hd)
    if rope is not None:
        q, k = _rope_ref(q, rope), _rope_ref(k, rope)
    k, v = k.repeat_interleave(h // kv, 1), v.repeat_interleave(h // kv, 1)
    s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd)
    s = s.masked_fill(~mask, float("-inf")).softmax(-1)
    return torch.einsum("hqk,khd->qhd", s, v).reshape(T, E) @ ws[3].T


def _weights(kv: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    kv_dim = E // 2 * kv if kv != 2 else E // 2 * 2
    return [
        torch.randn(E, E, generator=g) * 0.3,
        torch.randn(kv_dim, E, generator=g) * 0.3,
        torch.randn(kv_dim, E, generator=g) * 0.3,
        torch.randn(E, E, generator=g) * 0.3,
    ]


def test_causal_attention_equals_torch_mha_forward_and_backward() -> None:
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(E, 2, bias=False, batch_first=True)
    W = tm.in_proj_weight.detach()
    xs = torch.randn(T, E)
    x_t = xs.clone().requires_grad_(True)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    ref = tm(x_t[None], x_t[None], x_t[None], attn_mask=mask, need_weights=False)[0][0]
    ref.sum().backward()

    def body(t, _T):
        inits = [
            const_init(W[:E]),
            const_init(W[E : 2 * E]),
            const_init(W[2 * E :]),
            const_init(tm.out_proj.weight),
        ]
        m = MultiHeadAttention(E, 2, t, w_init_funs=inits)
        y = m(_seq_input(t, xs))
        y.sum().backward()
        return m, y

    run, (m, y) = build_and_run(1, body, lambda t, T_: {T_: T})
    close(run.get(y, slice(0, T)), ref)
    close(run.get(m.q_proj.w.grad), tm.in_proj_weight.grad[:E], 1e-4)
    close(run.get(m.output_proj.w.grad), tm.out_proj.weight.grad, 1e-4)


@pytest.mark.parametrize("case", ["window", "custom", "gqa_rope", "rope_scaled"])
def test_attention_variants(case: str) -> None:
    xs = torch.randn(T, E, generator=torch.Generator().manual_seed(3))
    kv = 1 if case == "gqa_rope" else 2
    h = 4 if case == "gqa_rope" else 2
    hd = E // h
    ws = _weights(kv, 11)
    ws[1], ws[2] = ws[1][: kv * hd], ws[2][: kv * hd]
    scaling = (
        RopeScalingParams(factor=8.0, original_max_position_embeddings=4)
        if case == "rope_scaled"
        else None
    )
    rope = case in ("gqa_rope", "rope_scaled")
    qi, ki = torch.arange(T)[:, None], torch.arange(T)[None]
    if case == "window":
        mask = (ki <= qi) & (ki > qi - 3)
    elif case == "custom":
        mask = (ki >= qi // 2) & (ki <= qi)
    else:
        mask = ki <= qi
    ref = _attn_ref(xs, ws, h, kv, mask, rope_frequencies(hd, 10000.0, scaling) if rope else None)

    def body(t, _T):
        m = MultiHeadAttention(
            E,
            h,
            t,
            apply_rope=rope,
            num_kv_heads=kv,
            w_init_funs=[const_init(w) for w in ws],
            rope_scaling_params=scaling,
        )
        x = _seq_input(t, xs)
        if case == "window":
            return m.windowed_forward(x, 3)
        if case == "custom":
            return m.forward(x, ie.slice_(t // 2, t + 1))
        return m.causal_forward(x)

    run, y = build_and_run(1, body, lambda t, T_: {T_: T})
    close(run.get(y, slice(0, T)), ref, 1e-4)


def test_rope_module_and_llama3_scaling() -> None:
    xs = torch.randn(T, 2, 8, generator=torch.Generator().manual_seed(4))
    sc = RopeScalingParams(
        factor=4.0, high_freq_factor=4.0, low_freq_factor=1.0, original_max_position_embeddings=16
    )
    freqs = rope_frequencies(8, 500.0, sc)
    plain = rope_frequencies(8, 500.0, None)
    # Vectorised llama3 scaling (as in HF transformers) as an independent reference.
    f = torch.tensor(plain)
    wl = 2 * math.pi / f
    out = torch.where(wl > 16 / 1.0, f / 4.0, f)
    smooth = (16 / wl - 1.0) / (4.0 - 1.0)
    mid = ~(wl < 16 / 4.0) & ~(wl > 16 / 1.0)
    ref = torch.where(mid, (1 - smooth) * out / 4.0 + smooth * out, out)
    close(torch.tensor(freqs), ref, 1e-12)
    assert not np.allclose(freqs, plain)

    def body(t, _T):
        x = RT.source_with_ts_udf(lambda ts: xs[ts[t]].clone(), (2, 8), "float32", domain=(t,))
        return RotaryPositionalEmbeddings(8, t, base=500.0, rope_scaling_params=sc)(x)

    run, y = build_and_run(1, body, lambda t, T_: {T_: T})
    close(run.get(y, slice(0, T)), _rope_ref(xs, freqs))


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_cells_forward_and_backward(kind: str) -> None:
    """One step of each cell (BPTT over many steps is covered by the autodiff tests; here
    the gate maths and weight layout are checked)."""
    torch.manual_seed(5)
    tc = torch.nn.GRUCell(3, 4) if kind == "gru" else torch.nn.LSTMCell(3, 4)
    xs, h0, c0 = torch.randn(2, 3), torch.randn(2, 4), torch.randn(2, 4)
    if kind == "gru":
        ref = tc(xs, h0)
    else:
        hh, cc = tc(xs, (h0, c0))
        ref = hh + 2 * cc
    ref.sum().backward()

    def body():
        cell = (GRUCell if kind == "gru" else LSTMCell)(3, 4)
        for lin, (w, b) in (
            (cell.ih, (tc.weight_ih, tc.bias_ih)),
            (cell.hh, (tc.weight_hh, tc.bias_hh)),
        ):
            lin.w, lin.b = leaf(w), leaf(b)
        if kind == "gru":
            y = cell(const(xs), const(h0))
        else:
            hh, cc = cell(const(xs), (const(h0), const(c0)))
            y = hh + cc * 2.0
        y.sum().backward()
        return cell, y

    run, (cell, y) = build_and_run(0, body)
    close(run.get(y), ref, 1e-5)
    close(run.get(cell.hh.w.grad), tc.weight_hh.grad, 1e-4)
    close(run.get(cell.ih.b.grad), tc.bias_ih.grad, 1e-4)


def test_attention_dropout_in_eval_mode_is_the_identity() -> None:
    xs = torch.randn(T, E, generator=torch.Generator().manual_seed(4))
    ws = _weights(2, 12)
    ref = _attn_ref(xs, ws, 2, 2, torch.arange(T)[None] <= torch.arange(T)[:, None], None)

    def body(t, _T):
        m = MultiHeadAttention(E, 2, t, dropout=0.3, w_init_funs=[const_init(w) for w in ws])
        return m.eval().causal_forward(_seq_input(t, xs))

    run, y = build_and_run(1, body, lambda t, T_: {T_: T})
    close(run.get(y, slice(0, T)), ref, 1e-4)


def test_attention_dropout_statistics() -> None:
    """Values are all 1 and heads have width 1, so each output is the kept attention mass
    rescaled by 1/(1-p): in {0, 2} at t = 0, mean 1 overall, and not all 1."""
    n, p = 64, 0.5
    xs = torch.randn(n, E, generator=torch.Generator().manual_seed(5))
    zero, eye = torch.zeros(E, E), torch.eye(E)
    ws = [torch.randn(E, E, generator=torch.Generator().manual_seed(6)), eye, zero, eye]
    bs = [torch.zeros(E), torch.zeros(E), torch.ones(E), torch.zeros(E)]

    def body(t, _T):
        m = MultiHeadAttention(E, E, t, dropout=p, bias=True,
                               w_init_funs=[const_init(w) for w in ws],
                               b_init_funs=[const_init(b) for b in bs])
        assert m.training
        return m.causal_forward(_seq_input(t, xs))

    run, y = build_and_run(1, body, lambda t, T_: {T_: n})
    out = run.get(y, slice(0, n))
    assert set(out[0].tolist()) <= {0.0, 2.0}
    assert abs(out.mean().item() - 1.0) < 0.1, out.mean()
    assert (out - 1.0).abs().max() > 0.3
