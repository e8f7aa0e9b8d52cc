"""Attention written as broadcast products and sums — the form `MultiHeadAttention` records
— is lowered to the attention primitive (`compiler/passes/lower_fused_contract.py`):
values and gradients equal torch eager on torch, jax and numpy, in several layouts
(heads first or keys first, no query dim, grouped-query heads, value dims before the
heads); near misses stay composite and still agree; `MultiHeadAttention` (MHA and GQA,
causal and window) over a time dim lowers and matches a torch reference, forward and
backward."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn import MultiHeadAttention
from tempo.api.nn.init import const_init
from tempo.core import ops
from tempo.core.configs import ExecutionConfig

RNG = np.random.default_rng(5)
BACKENDS = ["torch", "jax", "numpy"]
H, KV, L, S, E, EV = 4, 2, 3, 5, 4, 6


def _a(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _cfg(backend: str, **kw: Any) -> ExecutionConfig:
    return dataclasses.replace(ExecutionConfig.test_cfg(), **{
        "backend": backend, "enable_algebraic_optimizer": True, **kw})


def _run(build: Callable[..., Any], arrays: tuple[np.ndarray, ...], backend: str = "torch",
         **kw: Any) -> tuple[np.ndarray, list[np.ndarray], list[str]]:
    """(value, gradients of the inputs, fused op kinds y is made of) of build(*inputs) with
    the loss sum(y^3); `build` works on tempo and torch tensors alike."""
    ctx = TempoContext(_cfg(backend, **kw), num_dims=0)
    with ctx:
        xs = [RT.const(a, requires_grad=True) for a in arrays]
        y = build(*xs)
        (y * y * y).sum().backward()
    sdg, made, work = ctx.sdg, set(), [y.tensor_id.op_id]
    while work:
        i = work.pop()
        if i not in made:
            made.add(i)
            work.extend(e.src.op_id for e in sdg.in_edges[i])
    fused = sorted(sdg.ops[i].describe() for i in made
                   if isinstance(sdg.ops[i], ops.SoftmaxOp | ops.AttentionOp))
    exe = ctx.compile({})
    exe.execute()
    got = exe.get_spatial_tensor_torch(y.tensor_id).numpy()
    grads = [exe.get_spatial_tensor_torch(x.grad.tensor_id).numpy() for x in xs]
    return got, grads, fused


def _torch(build: Callable[..., Any], arrays: tuple[np.ndarray, ...]
           ) -> tuple[np.ndarray, list[np.ndarray]]:
    ts = [torch.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    y = build(*ts)
    (y * y * y).sum().backward()
    return y.detach().numpy(), [t.grad.numpy() for t in ts]  # type: ignore[union-attr]


def _close(ours: tuple[np.ndarray, list[np.ndarray], list[str]],
           want: tuple[np.ndarray, list[np.ndarray]]) -> None:
    np.testing.assert_allclose(ours[0], want[0], rtol=1e-5, atol=1e-5)
    for g, w in zip(ours[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def _softmax(x: Any, d: int) -> Any:
    """Hand-written (lowered first by `lower_softmax`), for both libraries."""
    e = (x - x.max(d, keepdim=True)[0]).exp()
    return e / e.sum(d, keepdim=True)


# every build is written once and runs on RT and torch.Tensor alike
def _heads_first(q: Any, k: Any, v: Any) -> Any:  # q (H,L,E) k (H,S,E) v (H,S,EV)
    p = ((q.unsqueeze(2) * k.unsqueeze(1)).sum(-1) / math.sqrt(E)).softmax(-1)  # (H,L,S)
    return (p.unsqueeze(-1) * v.unsqueeze(1)).sum(2)                             # (H,L,EV)


def _keys_first_gqa(q: Any, k: Any, v: Any) -> Any:  # as MultiHeadAttention records it
    qg = q.reshape((KV, H // KV, E)).unsqueeze(0)                 # (1,KV,rep,E)
    s = (qg * k.unsqueeze(2)).sum(3) * (1.0 / math.sqrt(E))       # (S,KV,rep)
    p = _softmax(s, 0)
    return (p.unsqueeze(3) * v.unsqueeze(2)).sum(0)               # (KV,rep,EV)


def _no_query_dim(q: Any, k: Any, v: Any) -> Any:  # q (H,E) k (S,H,E) v (S,H,EV)
    p = (q * k).sum(-1).softmax(0)                                # (S,H), numpy broadcast
    return (v * p.unsqueeze(-1)).sum(0)                           # (H,EV), p second


def _values_before_heads(q: Any, k: Any, v: Any) -> Any:  # v (S,EV,H): output (EV,H)
    p = ((q * k).sum(-1) * 0.3).softmax(0)                        # (S,H)
    return (p.unsqueeze(1) * v).sum(0, keepdim=True)              # (1,EV,H)


CASES: dict[str, tuple[Callable[..., Any], tuple[np.ndarray, ...]]] = {
    "heads_first": (_heads_first, (_a(H, L, E), _a(H, S, E), _a(H, S, EV))),
    "keys_first_gqa": (_keys_first_gqa, (_a(H, E), _a(S, KV, E), _a(S, KV, EV))),
    "no_query_dim": (_no_query_dim, (_a(H, E), _a(S, H, E), _a(S, H, EV))),
    "values_before_heads_keepdim": (_values_before_heads,
                                    (_a(H, E), _a(S, H, E), _a(S, EV, H))),
}


@pytest.mark.parametrize("name,backend", [(n, b) for n in CASES for b in BACKENDS
                                          if b != "jax" or n != "no_query_dim"])
def test_product_sum_attention_lowered_values_and_grads_match_torch(name: str,
                                                                    backend: str) -> None:
    build, arrays = CASES[name]
    got = _run(build, arrays, backend)
    assert got[2] == ["attention"], got[2]
    _close(got, _torch(build, arrays))


def test_lowered_equals_torch_sdpa() -> None:
    """An independent reference besides the composite: torch's fused call."""
    q, k, v = CASES["heads_first"][1]
    got = _run(_heads_first, (q, k, v))
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)))
    np.testing.assert_allclose(got[0], want.numpy(), rtol=1e-5, atol=1e-5)


def _key_only_batch(q: Any, k: Any, v: Any) -> Any:  # q (L,E) shared by the heads of k
    p = (q.unsqueeze(1) * k.unsqueeze(1)).sum(-1).softmax(-1)     # (H,L,S)
    return (p.unsqueeze(-1) * v.unsqueeze(1)).sum(2)


def _softmax_over_heads(q: Any, k: Any, v: Any) -> Any:
    p = (q.unsqueeze(2) * k.unsqueeze(1)).sum(-1).softmax(0)
    return (p.unsqueeze(-1) * v.unsqueeze(1)).sum(2)


def _scaled_probabilities(q: Any, k: Any, v: Any) -> Any:  # dropout's rescale, say
    p = (q.unsqueeze(2) * k.unsqueeze(1)).sum(-1).softmax(-1) * 0.5
    return (p.unsqueeze(-1) * v.unsqueeze(1)).sum(2)


def _sum_over_values(q: Any, k: Any, v: Any) -> Any:
    p = (q.unsqueeze(2) * k.unsqueeze(1)).sum(-1).softmax(-1)
    return (p.unsqueeze(-1) * v.unsqueeze(1)).sum(3)


def _probabilities_read_outside(q: Any, k: Any, v: Any) -> Any:
    p = (q.unsqueeze(2) * k.unsqueeze(1)).sum(-1).softmax(-1)
    return (p.unsqueeze(-1) * v.unsqueeze(1)).sum(2) + p.sum(-1, keepdim=True)


def _log_probabilities(q: Any, k: Any, v: Any) -> Any:
    p = (q.unsqueeze(2) * k.unsqueeze(1)).sum(-1).log_softmax(-1)
    return (p.unsqueeze(-1) * v.unsqueeze(1)).sum(2)


def _values_shared_by_heads(q: Any, k: Any, v: Any) -> Any:  # v (S,EV): broadcast over H
    p = (q.unsqueeze(2) * k.unsqueeze(1)).sum(-1).softmax(-1)
    return (p.unsqueeze(-1) * v).sum(2)


QKV = (_a(H, L, E), _a(H, S, E), _a(H, S, EV))
NEAR: dict[str, tuple[Callable[..., Any], tuple[np.ndarray, ...]]] = {
    "keys_only_batch_dim": (_key_only_batch, (_a(L, E), _a(H, S, E), _a(H, S, EV))),
    "softmax_over_heads": (_softmax_over_heads, QKV),
    "scaled_probabilities": (_scaled_probabilities, QKV),
    "sum_over_values": (_sum_over_values, QKV),
    "probabilities_read_outside": (_probabilities_read_outside, QKV),
    "log_softmax": (_log_probabilities, QKV),
    "values_shared_by_heads": (_values_shared_by_heads, (*QKV[:2], _a(S, EV))),
}


@pytest.mark.parametrize("name", list(NEAR))
def test_near_misses_stay_composite_and_agree(name: str) -> None:
    build, arrays = NEAR[name]
    got = _run(build, arrays)
    assert "attention" not in got[2], got[2]
    _close(got, _torch(build, arrays))


def test_rule_switches_off_by_name() -> None:
    build, arrays = CASES["heads_first"]
    got = _run(build, arrays, algebraic_optims_to_disable=("lower_attention",))
    assert got[2] == ["softmax"], got[2]
    _close(got, _torch(build, arrays))


# ---------------------------------------------------------------- MultiHeadAttention
T, D = 6, 8


def _mha_ref(xs: torch.Tensor, ws: list[torch.Tensor], h: int, kv: int, window: int | None
             ) -> torch.Tensor:
    hd = D // h
    q = (xs @ ws[0].T).reshape(T, h, hd).transpose(0, 1)
    k = (xs @ ws[1].T).reshape(T, kv, hd).repeat_interleave(h // kv, 1).transpose(0, 1)
    v = (xs @ ws[2].T).reshape(T, kv, hd).repeat_interleave(h // kv, 1).transpose(0, 1)
    qi, ki = torch.arange(T)[:, None], torch.arange(T)[None]
    mask = (ki <= qi) & (ki > qi - (window or T))
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return o.transpose(0, 1).reshape(T, D) @ ws[3].T


MHA_CASES = {"mha": (2, 2, None), "gqa": (4, 2, None), "mqa_window": (4, 1, 3)}


@pytest.mark.parametrize("case,backend", [  # jax compiles each kernel: one case there
    ("mha", "torch"), ("gqa", "torch"), ("gqa", "jax"), ("gqa", "numpy"),
    ("mqa_window", "torch"), ("mqa_window", "numpy")])
def test_multihead_attention_is_lowered_and_matches_torch(case: str, backend: str) -> None:
    heads, kv, window = MHA_CASES[case]
    g = torch.Generator().manual_seed(7)
    hd = D // heads
    ws = [torch.randn(D, D, generator=g) * 0.3, torch.randn(kv * hd, D, generator=g) * 0.3,
          torch.randn(kv * hd, D, generator=g) * 0.3, torch.randn(D, D, generator=g) * 0.3]
    xs = torch.randn(T, D, generator=g)
    ctx = TempoContext(_cfg(backend), num_dims=1)
    ((t, bound),) = ctx.variables_and_bounds
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: xs[ts[t]].clone(), (D,), "float32", domain=(t,))
        m = MultiHeadAttention(D, heads, t, num_kv_heads=kv,
                               w_init_funs=[const_init(w) for w in ws])
        y = m(x) if window is None else m.windowed_forward(x, window)
        y.sum().backward()
    kinds = [type(op).__name__ for op in ctx.sdg.ops.values()]
    assert "AttentionOp" in kinds, kinds
    exe = ctx.compile({bound: T})
    exe.execute()
    tw = [w.clone().requires_grad_(True) for w in ws]
    want = _mha_ref(xs, tw, heads, kv, window)
    want.sum().backward()
    got = exe.get_spatial_tensor_torch(y.tensor_id, (slice(0, T),))
    torch.testing.assert_close(got, want.detach(), rtol=1e-5, atol=1e-5)
    for lin, ref in zip((m.q_proj, m.k_proj, m.v_proj, m.output_proj), tw):
        torch.testing.assert_close(exe.get_spatial_tensor_torch(lin.w.grad.tensor_id),
                                   ref.grad, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- .grad of intermediates
def _grads_of_intermediates(build: Callable[..., tuple[Any, dict[str, Any]]],
                            arrays: tuple[np.ndarray, ...], backend: str
                            ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[str]]:
    """`build` returns (y, named intermediates); their `.grad` under the loss sum(y^3) in
    Tempo (lowered: the fused kinds y is made of) and with torch's retain_grad."""
    ctx = TempoContext(_cfg(backend), num_dims=0)
    with ctx:
        xs = [RT.const(a, requires_grad=True) for a in arrays]
        y, mids = build(*xs)
        (y * y * y).sum().backward()
    sdg, made, work = ctx.sdg, set(), [y.tensor_id.op_id]
    while work:
        i = work.pop()
        if i not in made:
            made.add(i)
            work.extend(e.src.op_id for e in sdg.in_edges[i])
    fused = sorted(sdg.ops[i].describe() for i in made if isinstance(
        sdg.ops[i], ops.SoftmaxOp | ops.NormOp | ops.AttentionOp))
    assert all(v.grad is not None and v._ctx is None for v in mids.values()), mids
    ctx.sdg.keep.update(v.grad.tensor_id for v in mids.values())
    exe = ctx.compile({})
    exe.execute()
    ours = {k: exe.get_spatial_tensor_torch(v.grad.tensor_id).numpy() for k, v in mids.items()}
    ts = [torch.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    ty, tmids = build(*ts)
    for v in tmids.values():
        v.retain_grad()
    (ty * ty * ty).sum().backward()
    return ours, {k: v.grad.numpy() for k, v in tmids.items()}, fused


def _softmax_parts(x: Any) -> tuple[Any, dict[str, Any]]:
    z = x - x.max(-1, keepdim=True)[0]
    e = z.exp()
    s = e.sum(-1, keepdim=True)
    return e / s, {"z": z, "e": e, "s": s}


def _layer_norm_parts(x: Any) -> tuple[Any, dict[str, Any]]:
    xc = x - x.mean(-1, keepdim=True)
    var = (xc * xc).mean(-1, keepdim=True)
    return xc / (var + 1e-5).sqrt(), {"xc": xc, "var": var}


def _attention_parts(q: Any, k: Any, v: Any) -> tuple[Any, dict[str, Any]]:
    s = (q.unsqueeze(2) * k.unsqueeze(1)).sum(-1) / math.sqrt(E)
    e = (s - s.max(-1, keepdim=True)[0]).exp()   # a hand-written softmax inside
    p = e / e.sum(-1, keepdim=True)
    return (p.unsqueeze(-1) * v.unsqueeze(1)).sum(2), {"s": s, "e": e, "p": p}


X6 = _a(2, 3, 6)
PARTS = {"softmax": (_softmax_parts, (X6,), ["softmax"]),
         "layer_norm": (_layer_norm_parts, (X6,), ["layer_norm"]),
         "attention_with_softmax_inside": (_attention_parts, CASES["heads_first"][1],
                                           ["attention"])}


@pytest.mark.parametrize("name,backend", [(n, "torch") for n in PARTS]
                         + [("attention_with_softmax_inside", b) for b in ("jax", "numpy")])
def test_intermediates_of_a_lowered_composite_get_their_grad(name: str, backend: str) -> None:
    """API §3.7: the intermediates keep `.grad` (torch's retain_grad values) although the
    composite runs as the fused op."""
    build, arrays, kinds = PARTS[name]
    ours, want, fused = _grads_of_intermediates(build, arrays, backend)
    assert fused == kinds, fused
    for k in want:
        np.testing.assert_allclose(ours[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_compile_config_disabling_a_rule_backward_applied_raises() -> None:
    """backward() lowers with the context's config; compiling under a config that turns
    that rule off raises (the flag would silently not apply), naming the rule; compiling
    under one that keeps it on runs."""
    from tempo.core.errors import UnsupportedError

    ctx = TempoContext(_cfg("torch"), num_dims=0)
    with ctx:
        x = RT.const(X6, requires_grad=True)
        y, _ = _softmax_parts(x)
        (y * y).sum().backward()
    other = TempoContext(_cfg("torch", algebraic_optims_to_disable=("lower_softmax",)))
    with other, pytest.raises(UnsupportedError, match="lower_softmax"):
        ctx.compile({}, use_active_config=True)
    same = TempoContext(_cfg("torch", algebraic_optims_to_disable=("lower_norm",)))
    with same:
        exe = ctx.compile({}, use_active_config=True)
    exe.execute()
    want = torch.from_numpy(X6).softmax(-1)
    torch.testing.assert_close(exe.get_spatial_tensor_torch(y.tensor_id), want)
