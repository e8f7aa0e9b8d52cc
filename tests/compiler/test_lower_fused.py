"""Hand-written softmax, log-softmax, layer / RMS norm and attention are lowered to the fused
primitives before autodiff (`compiler/passes/lower_fused*.py`): values and gradients equal
torch eager's fused functions on torch, jax and numpy; the composite's kernels are gone;
near-misses (other dims, eps, mask order, a shared or detached intermediate, an unshifted
softmax) are left as written and still agree with torch; each rule switches off by name."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

import tempo.api.recurrent_tensor as tpo
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import ops
from tempo.core.configs import ExecutionConfig

RNG = np.random.default_rng(11)
X = RNG.standard_normal((2, 3, 6)).astype(np.float32)
W = RNG.standard_normal(6).astype(np.float32)
Q, K, V = (RNG.standard_normal((2, 3, 5, 4)).astype(np.float32) for _ in range(3))
KEEP = RNG.random((5, 5)) > 0.3
KEEP[:, 0] = True
BIAS = RNG.standard_normal((5, 5)).astype(np.float32)
FUSED = (ops.SoftmaxOp, ops.NormOp, ops.AttentionOp)
BACKENDS = ["torch", "jax", "numpy"]


def _cfg(backend: str, **kw: Any) -> ExecutionConfig:
    return dataclasses.replace(ExecutionConfig.test_cfg(), **{
        "backend": backend, "enable_algebraic_optimizer": True, **kw})


def _run(build: Callable[..., RT], arrays: tuple[np.ndarray, ...], backend: str = "torch",
         **kw: Any) -> tuple[np.ndarray, list[np.ndarray], list[str]]:
    """(value, gradients of the inputs, fused op kinds recorded) of build(*inputs) with the
    loss sum(y^3) (a non-uniform upstream gradient)."""
    ctx = TempoContext(_cfg(backend, **kw), num_dims=0)
    with ctx:
        xs = [RT.const(a, requires_grad=True) for a in arrays]
        y = build(*xs)
        (y * y * y).sum().backward()
    fused = sorted(op.describe() for op in ctx.sdg.ops.values() if isinstance(op, FUSED))
    exe = ctx.compile({})
    exe.execute()
    got = exe.get_spatial_tensor_torch(y.tensor_id).numpy()
    grads = [exe.get_spatial_tensor_torch(x.grad.tensor_id).numpy() for x in xs]
    return got, grads, fused


def _torch(fn: Callable[..., torch.Tensor], arrays: tuple[np.ndarray, ...]
           ) -> tuple[np.ndarray, list[np.ndarray]]:
    ts = [torch.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    y = fn(*ts)
    (y * y * y).sum().backward()
    return y.detach().numpy(), [t.grad.numpy() for t in ts]  # type: ignore[union-attr]


def _close(ours: tuple[np.ndarray, list[np.ndarray]], want: tuple[np.ndarray, list[np.ndarray]]
           ) -> None:
    np.testing.assert_allclose(ours[0], want[0], rtol=1e-5, atol=1e-5)
    for g, w in zip(ours[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- composites
def _softmax(x: RT) -> RT:
    e = (x - x.max(-1, keepdim=True)[0]).exp()
    return e / e.sum(-1, keepdim=True)


def _softmax_dim1_detached_unsqueezed(x: RT) -> RT:
    m = x.max(1)[0].detach().unsqueeze(1)  # keepdim=False, then the dim put back
    e = (x - m).exp()
    return e / e.sum(1, keepdim=True)


def _log_softmax(x: RT) -> RT:
    z = x - x.max(-1, keepdim=True)[0]
    return z - z.exp().sum(-1, keepdim=True).ln()


def _log_softmax_lse(x: RT) -> RT:
    return x - x.logsumexp(-1, keepdim=True)


def _layer_norm(x: RT, w: RT) -> RT:
    xc = x - x.mean(-1, keepdim=True)
    return xc / ((xc * xc).mean(-1, keepdim=True) + 1e-5).sqrt() * w + 0.5


def _layer_norm_2d(x: RT) -> RT:
    xc = x - x.mean((1, 2), keepdim=True)
    return xc * ((xc ** 2).mean((1, 2), keepdim=True) + 1e-3).sqrt().reciprocal()


def _rms_norm(x: RT, w: RT) -> RT:
    return w * (x * (x.square().mean(-1, keepdim=True) + 1e-6) ** -0.5)


COMPOSITES: dict[str, tuple[Callable[..., RT], Callable[..., torch.Tensor], tuple[Any, ...],
                            str]] = {
    "softmax": (_softmax, lambda x: x.softmax(-1), (X,), "softmax"),
    "softmax_dim1": (_softmax_dim1_detached_unsqueezed, lambda x: x.softmax(1), (X,),
                     "softmax"),
    "log_softmax": (_log_softmax, lambda x: x.log_softmax(-1), (X,), "log_softmax"),
    "log_softmax_lse": (_log_softmax_lse, lambda x: x.log_softmax(-1), (X,), "log_softmax"),
    "layer_norm": (_layer_norm, lambda x, w: F.layer_norm(x, (6,), w, eps=1e-5) + 0.5,
                   (X, W), "layer_norm"),
    "layer_norm_2d": (_layer_norm_2d, lambda x: F.layer_norm(x, (3, 6), eps=1e-3), (X,),
                      "layer_norm"),
    "rms_norm": (_rms_norm, lambda x, w: F.rms_norm(x, (6,), w, eps=1e-6), (X, W),
                 "rms_norm"),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(COMPOSITES))
def test_composite_lowered_values_and_grads_match_torch(name: str, backend: str) -> None:
    ours, theirs, arrays, kind = COMPOSITES[name]
    got, grads, fused = _run(ours, arrays, backend)
    assert kind in fused, fused
    _close((got, grads), _torch(theirs, arrays))


def test_lowered_softmax_runs_one_kernel_not_five() -> None:
    """The compiled forward holds the fused op and none of max, exp, sum (the composite's
    kernels); the gradient is the closed form (no exp either)."""
    ctx = TempoContext(_cfg("torch"), num_dims=0)
    with ctx:
        x = RT.const(X, requires_grad=True)
        y = _softmax(x)
        (y * RT.const(X)).sum().backward()
    sdg = ctx.sdg
    need, work = set(), [y.tensor_id.op_id, x.grad.tensor_id.op_id]  # what they are made of
    while work:
        i = work.pop()
        if i not in need:
            need.add(i)
            work.extend(e.src.op_id for e in sdg.in_edges[i])
    kinds = [sdg.ops[i].describe() for i in need]
    assert kinds.count("softmax") == 1 and "max" not in kinds and "exp" not in kinds, kinds


# ---------------------------------------------------------------- attention
def _t(k: RT) -> RT:
    return k.transpose(-2, -1)


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kw: Any) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, **kw)


ATTENTION: dict[str, tuple[Callable[..., RT], Callable[..., torch.Tensor]]] = {
    "scaled_div": (lambda q, k, v: ((q @ _t(k)) / math.sqrt(4)).softmax(-1) @ v,
                   lambda q, k, v: _sdpa(q, k, v)),
    "keep_mask_composite_softmax": (
        lambda q, k, v: _softmax(tpo.where(RT.const(KEEP), (q @ _t(k)) * 0.3,
                                           float("-inf"))) @ v,
        lambda q, k, v: _sdpa(q, k, v, attn_mask=torch.from_numpy(KEEP), scale=0.3)),
    "masked_fill": (
        lambda q, k, v: tpo.where(RT.const(~KEEP), float("-inf"),
                                  0.3 * (q @ _t(k))).softmax(-1) @ v,
        lambda q, k, v: _sdpa(q, k, v, attn_mask=torch.from_numpy(KEEP), scale=0.3)),
    "float_mask_scaled_q": (
        lambda q, k, v: ((q * 0.5) @ _t(k) + RT.const(BIAS)).softmax(-1) @ v,
        lambda q, k, v: _sdpa(q, k, v, attn_mask=torch.from_numpy(BIAS), scale=0.5)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(ATTENTION))
def test_attention_lowered_values_and_grads_match_torch(name: str, backend: str) -> None:
    ours, theirs = ATTENTION[name]
    got, grads, fused = _run(ours, (Q, K, V), backend)
    assert fused.count("attention") == 1, fused
    _close((got, grads), _torch(theirs, (Q, K, V)))


# ---------------------------------------------------------------- near misses
def _sum_other_dim(x: RT) -> RT:
    e = (x - x.max(-1, keepdim=True)[0]).exp()
    return e / e.sum(-2, keepdim=True)


def _shared_exp(x: RT) -> RT:
    e = (x - x.max(-1, keepdim=True)[0]).exp()
    return e / e.sum(-1, keepdim=True) + e  # e is read outside the composite


def _detached_sum(x: RT) -> RT:
    e = (x - x.max(-1, keepdim=True)[0]).exp()
    return e / e.sum(-1, keepdim=True).detach()


def _unshifted(x: RT) -> RT:
    return x.exp() / x.exp().sum(-1, keepdim=True)


def _wrong_mean(x: RT) -> RT:
    xc = x - x.sum(-1, keepdim=True) / 5.0  # six elements
    return xc / ((xc * xc).mean(-1, keepdim=True) + 1e-5).sqrt()


def _var_other_dims(x: RT) -> RT:
    return x / ((x * x).mean(-2, keepdim=True) + 1e-5).sqrt()


def _negative_eps(x: RT) -> RT:
    return x / ((x * x).mean(-1, keepdim=True) + -1e-3 + 1.0).sqrt()


NEAR_MISSES: dict[str, tuple[Callable[..., RT], Callable[..., torch.Tensor], tuple[Any, ...]]] = {
    "softmax_sum_other_dim": (
        _sum_other_dim,
        lambda x: (x - x.amax(-1, keepdim=True)).exp()
        / (x - x.amax(-1, keepdim=True)).exp().sum(-2, keepdim=True), (X,)),
    "softmax_exp_read_outside": (
        _shared_exp, lambda x: x.softmax(-1) + (x - x.amax(-1, keepdim=True)).exp(), (X,)),
    "softmax_detached_denominator": (
        _detached_sum, lambda x: (x - x.amax(-1, keepdim=True)).exp()
        / (x - x.amax(-1, keepdim=True)).exp().sum(-1, keepdim=True).detach(), (X,)),
    "softmax_unshifted": (_unshifted, lambda x: x.exp() / x.exp().sum(-1, keepdim=True), (X,)),
    "norm_wrong_mean": (
        _wrong_mean, lambda x: (x - x.sum(-1, keepdim=True) / 5.0)
        / ((x - x.sum(-1, keepdim=True) / 5.0) ** 2 + 0).mean(-1, keepdim=True)
        .add(1e-5).sqrt(), (X,)),
    "rms_over_a_leading_dim": (
        _var_other_dims, lambda x: x / ((x * x).mean(-2, keepdim=True) + 1e-5).sqrt(), (X,)),
    "rms_eps_not_one_constant": (
        _negative_eps, lambda x: x / ((x * x).mean(-1, keepdim=True) - 1e-3 + 1.0).sqrt(),
        (X,)),
    "attention_mask_before_scale": (
        lambda q, k, v: ((q @ _t(k) + RT.const(BIAS)) * 0.5).softmax(-1) @ v,
        lambda q, k, v: ((q @ k.transpose(-2, -1) + torch.from_numpy(BIAS)) * 0.5)
        .softmax(-1) @ v, (Q, K, V)),
    "attention_finite_fill": (
        lambda q, k, v: tpo.where(RT.const(KEEP), q @ _t(k), -1e4).softmax(-1) @ v,
        lambda q, k, v: (q @ k.transpose(-2, -1)).masked_fill(
            torch.from_numpy(~KEEP), -1e4).softmax(-1) @ v, (Q, K, V)),
    "attention_softmax_over_queries": (
        lambda q, k, v: (q @ _t(k)).softmax(-2) @ v,
        lambda q, k, v: (q @ k.transpose(-2, -1)).softmax(-2) @ v, (Q, K, V)),
}
NEAR_KINDS = {"softmax_sum_other_dim": [], "softmax_exp_read_outside": [],
              "softmax_detached_denominator": [], "softmax_unshifted": [],
              "norm_wrong_mean": ["rms_norm"],  # no layer norm: the RMS norm of x - s/5
              "rms_over_a_leading_dim": [],
              "rms_eps_not_one_constant": [], "attention_mask_before_scale": ["softmax"],
              "attention_finite_fill": ["softmax"],
              "attention_softmax_over_queries": ["softmax"]}


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_near_misses_stay_composites_and_agree(name: str) -> None:
    ours, theirs, arrays = NEAR_MISSES[name]
    got, grads, fused = _run(ours, arrays)
    assert fused == NEAR_KINDS[name], fused
    _close((got, grads), _torch(theirs, arrays))


@pytest.mark.parametrize("rule,build", [("lower_softmax", _softmax),
                                        ("lower_log_softmax", _log_softmax),
                                        ("lower_norm", lambda x: _layer_norm(x, RT.const(W)))])
def test_each_rule_switches_off_by_name(rule: str, build: Callable[..., RT]) -> None:
    _, _, fused = _run(build, (X,), algebraic_optims_to_disable=(rule,))
    assert fused == [], fused
    _, _, fused = _run(build, (X,), enable_algebraic_optimizer=False)
    assert fused == [], fused


def test_attention_rule_switches_off_by_name() -> None:
    ours, _ = ATTENTION["scaled_div"]
    _, _, fused = _run(ours, (Q, K, V), algebraic_optims_to_disable=("lower_attention",))
    assert "attention" not in fused, fused


# ---------------------------------------------------------------- over a growing history
T_, H, DH = 7, 2, 4
XT = RNG.standard_normal((T_, DH)).astype(np.float32)
WQKV = [RNG.standard_normal((DH, H * DH)).astype(np.float32) * 0.5 for _ in range(3)]


def _decode_cfg(backend: str, tmp_path: Any) -> ExecutionConfig:
    return _cfg(backend, path=str(tmp_path) + "/", enable_statifying_incrementalization=True,
                inc_statify_block_size=3, enable_dead_code_elim=True,
                enable_duplicate_code_elim=True, executor_debug_mode=False,
                enable_hybrid_tensorstore=True, enable_lazy_slice=True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_attention_over_a_growing_history_is_lowered_then_tiled(backend: str, train: bool,
                                                                tmp_path: Any) -> None:
    """`softmax(q @ k[0:t+1]^T / sqrt(d)) @ v[0:t+1]` written by hand becomes the attention
    primitive, which statify then tiles (in training too: the primitive's backward
    recomputes the probabilities); values and the projections' gradients equal eager."""
    ctx = TempoContext(_decode_cfg(backend, tmp_path), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: list[torch.Tensor] = []
    data = torch.from_numpy(XT)
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]].reshape(1, DH), (1, DH),
                                  tpo.dtypes.float32, domain=(t,))
        ws = [RT.const(w, requires_grad=train) for w in WQKV]
        q = (x @ ws[0]).reshape((H, 1, DH))
        k, v = ((x @ w).reshape((H, DH)) for w in ws[1:])
        keys = k[0:t + 1].permute((1, 2, 0))                         # (H, DH, S)
        vals = v[0:t + 1].permute((1, 0, 2))                         # (H, S, DH)
        p = ((q @ keys) / math.sqrt(DH)).softmax(-1)                 # (H, S): squeezed
        o = p.unsqueeze(-2) @ vals                                   # (H, DH): squeezed
        o.sink_udf(lambda a: got.append(torch.tensor(np.array(a))))
        if train:
            o.sum().backward()
    if train:
        ctx.sdg.keep.update(w.grad.tensor_id for w in ws)
    exe = ctx.compile({T: T_})
    exe.execute()
    kinds = [type(op).__name__ for op in exe.sdg.ops.values()]
    assert kinds.count("TiledAttentionOp") == 1, kinds
    assert train or ("SoftmaxOp" not in kinds and kinds.count("MatMulOp") == 3), kinds
    tw = [torch.from_numpy(w).requires_grad_(True) for w in WQKV]
    tq, tk, tv = ((data @ w).reshape(T_, H, DH) for w in tw)
    want = torch.stack([F.scaled_dot_product_attention(
        tq[i].unsqueeze(1), tk[: i + 1].transpose(0, 1), tv[: i + 1].transpose(0, 1))
        for i in range(T_)])
    torch.testing.assert_close(torch.stack(got).reshape(want.shape), want.detach(),
                               rtol=1e-5, atol=1e-5)
    if train:
        want.sum().backward()
        for w, ref in zip(ws, tw):
            torch.testing.assert_close(exe.get_spatial_tensor_torch(w.grad.tensor_id),
                                       ref.grad, rtol=1e-4, atol=1e-4)
