"""Statify (ARCHITECTURE §5.4): attention over a growing history `k[0:t+1]` or a window
`k[max(0,t-W+1):t+1]` runs as one tiled op over static blocks of U points (the last padded
and masked, an online softmax across blocks), agreeing with eager torch on every backend
for block sizes that divide T, do not, and exceed it; on jax every step compiles nothing
new; gradient programs (whose backward reads the probabilities) stay exact."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
import torch

import tempo.api.recurrent_tensor as tpo
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.ops_region import flat_ops

T_, H, DH, W = 11, 2, 4, 4
RNG = np.random.default_rng(7)
Q, K, V = (RNG.standard_normal((T_, H, DH)).astype(np.float32) for _ in range(3))
SCALE = 1.0 / math.sqrt(DH)


def _src(a: np.ndarray, t: Any, shape: tuple[int, ...]) -> RT:
    data = torch.from_numpy(a)
    n = data.shape[0]  # a longer decode cycles through the data
    dt = dtypes.bool_ if a.dtype == np.bool_ else dtypes.float32
    return RT.source_with_ts_udf(lambda ts: data[ts[t] % n].reshape(shape), shape,
                                 dt, domain=(t,))


def _attention(q: RT, k: RT, v: RT, t: Any, window: int | None, sdpa: bool = False) -> RT:
    lo = 0 if window is None else ie.max(0, t - window + 1)
    if sdpa:  # the attention primitive: (H, 1, DH) x (H, S, DH) x (H, S, DH)
        return tpo.scaled_dot_product_attention(q, k[lo: t + 1].permute((1, 0, 2)),
                                                v[lo: t + 1].permute((1, 0, 2)),
                                                scale=SCALE).reshape((H, DH))
    keys = k[lo: t + 1].permute((1, 2, 0))          # (H, DH, S)
    vals = v[lo: t + 1].permute((1, 0, 2))          # (H, S, DH)
    p = ((q @ keys) * SCALE).softmax(-1)           # (H, S): the API squeezes matmuls
    return p.unsqueeze(-2) @ vals                  # (H, DH)


def _eager(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int | None
           ) -> torch.Tensor:
    outs = []
    for t in range(q.shape[0]):
        lo = 0 if window is None else max(0, t - window + 1)
        s = torch.einsum("hd,shd->hs", q[t], k[lo: t + 1]) * SCALE
        outs.append(torch.einsum("hs,shd->hd", torch.softmax(s, -1), v[lo: t + 1]))
    return torch.stack(outs)


def _cfg(tmp_path: Any, backend: str, tile: bool, U: int) -> ExecutionConfig:
    return dataclasses.replace(
        ExecutionConfig.test_cfg(), backend=backend, path=str(tmp_path) + "/",
        enable_statifying_incrementalization=tile, inc_statify_block_size=U,
        enable_hybrid_tensorstore=True, enable_inplace_write=True, enable_lazy_slice=True,
        enable_gc=True, executor_debug_mode=False)


def _run(cfg: ExecutionConfig, window: int | None, steps: int = T_, sdpa: bool = False
         ) -> tuple[torch.Tensor, Any]:
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: list[torch.Tensor] = []
    with ctx:
        q = _src(Q, t, (H, 1, DH))
        k, v = _src(K, t, (H, DH)), _src(V, t, (H, DH))
        o = _attention(q, k, v, t, window, sdpa)
        o.sink_udf(lambda x: got.append(torch.from_dlpack(np.asarray(x) if not isinstance(
            x, torch.Tensor) else x).clone()))
    exe = ctx.compile({T: steps})
    exe.execute()
    return torch.stack(got).reshape(steps, H, DH), exe


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
@pytest.mark.parametrize("window", [None, W], ids=["causal", "window"])
@pytest.mark.parametrize("U", [1, 3, 4, 16])
@pytest.mark.parametrize("sdpa", [False, True], ids=["composite", "sdpa"])
def test_tiled_attention_matches_eager_torch(backend: str, window: int | None, U: int,
                                             sdpa: bool, tmp_path: Any) -> None:
    got, exe = _run(_cfg(tmp_path, backend, True, U), window, sdpa=sdpa)
    tiled = [op for op in flat_ops(exe.sdg.ops.values()) if isinstance(op, ops.TiledAttentionOp)]
    assert len(tiled) == 1 and tiled[0].block == U
    assert not any(isinstance(op, ops.SoftmaxOp | ops.AttentionOp | ops.PermuteOp)
                   for op in flat_ops(exe.sdg.ops.values()))
    want = _eager(torch.from_numpy(Q), torch.from_numpy(K), torch.from_numpy(V), window)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_statify_off_keeps_the_composite(tmp_path: Any) -> None:
    got, exe = _run(_cfg(tmp_path, "torch", False, 3), None)
    assert not any(isinstance(op, ops.TiledAttentionOp) for op in flat_ops(exe.sdg.ops.values()))
    want = _eager(torch.from_numpy(Q), torch.from_numpy(K), torch.from_numpy(V), None)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_jax_compiles_once_per_block_shape(tmp_path: Any) -> None:
    """The tiled kernel's pieces compile for the block shape, not for every step: after a
    decode of T steps, one of 2T steps compiles nothing (untiled, each new step's key
    length compiles every attention kernel again)."""
    import jax  # a core dependency: no skip
    from jax._src.interpreters import pxla

    counted = [0]
    compile_ = pxla._cached_compilation

    def counting(*args: Any, **kw: Any) -> Any:
        counted[0] += 1
        return compile_(*args, **kw)

    counts = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pxla, "_cached_compilation", counting)
        for tile in (True, False):
            _run(_cfg(tmp_path, "jax", tile, 4), None, T_)
            counted[0] = 0
            _run(_cfg(tmp_path, "jax", tile, 4), None, 2 * T_)
            counts.append(counted[0])
    assert counts[0] == 0 and counts[1] >= T_, counts
    del jax


@pytest.mark.parametrize("window", [None, W], ids=["causal", "window"])
@pytest.mark.parametrize("sdpa", [False, True], ids=["composite", "sdpa"])
def test_gradients_through_attention_with_statify_on(window: int | None, sdpa: bool,
                                                     tmp_path: Any) -> None:
    """A training program: gradients of the projections match torch autograd. The
    composite's backward reads its probabilities (its forward stays untiled); the attention
    primitive's recomputes them from q, k and v, so its forward is tiled."""
    X = RNG.standard_normal((T_, DH)).astype(np.float32)
    Wq, Wk, Wv = (RNG.standard_normal((DH, H * DH)).astype(np.float32) * 0.5
                  for _ in range(3))
    cfg = _cfg(tmp_path, "torch", True, 3)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        x = _src(X, t, (1, DH))
        wq, wk, wv = (RT.const(w, requires_grad=True) for w in (Wq, Wk, Wv))
        q = (x @ wq).reshape((H, 1, DH))
        k = (x @ wk).reshape((H, DH))
        v = (x @ wv).reshape((H, DH))
        o = _attention(q, k, v, t, window, sdpa)
        o.sum().backward()
    ctx.sdg.keep.update(w.grad.tensor_id for w in (wq, wk, wv))  # read after the run
    exe = ctx.compile({T: T_})
    exe.execute()
    n_tiled = sum(isinstance(op, ops.TiledAttentionOp) for op in flat_ops(exe.sdg.ops.values()))
    assert n_tiled == (1 if sdpa else 0)
    tx = torch.from_numpy(X)
    tw = [torch.from_numpy(w).requires_grad_(True) for w in (Wq, Wk, Wv)]
    tq, tk, tv = ((tx @ w).reshape(T_, H, DH) for w in tw)
    _eager(tq, tk, tv, window).sum().backward()
    for w, ref in zip((wq, wk, wv), tw):
        torch.testing.assert_close(exe.get_spatial_tensor_torch(w.grad.tensor_id), ref.grad,
                                   rtol=1e-4, atol=1e-5)


BIAS = RNG.standard_normal((T_,)).astype(np.float32)
KEEP = RNG.random(T_) > 0.4
KEEP[0], KEEP[5:8] = True, False  # whole blocks masked out (U=1, 3)


def _masked_attention(q: RT, k: RT, v: RT, t: Any, form: str) -> RT:
    bias, keep = _src(BIAS, t, ()), _src(KEEP, t, ())
    if form == "sdpa-keep":  # the attention primitive with a boolean mask over the keys
        return tpo.scaled_dot_product_attention(q, k[0: t + 1].permute((1, 0, 2)),
                                                v[0: t + 1].permute((1, 0, 2)),
                                                attn_mask=keep[0: t + 1],
                                                scale=SCALE).reshape((H, DH))
    scores = (q @ k[0: t + 1].permute((1, 2, 0))) * SCALE          # (H, S)
    if form == "add":
        scores = scores + bias[0: t + 1]
    else:  # "drop": masked where the negated mask holds
        scores = (~keep[0: t + 1]).where(float("-inf"), scores)
    return scores.softmax(-1).unsqueeze(-2) @ v[0: t + 1].permute((1, 0, 2))


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
@pytest.mark.parametrize("U", [1, 3, 16])
@pytest.mark.parametrize("form", ["add", "drop", "sdpa-keep"])
def test_masked_attention_is_tiled_and_matches_torch(backend: str, U: int, form: str,
                                                     tmp_path: Any) -> None:
    """A user mask read over the same growing range (an additive bias, a boolean mask as
    `where`, the primitive's `attn_mask`) is tiled with the keys: blocks it masks whole
    contribute nothing."""
    ctx = TempoContext(_cfg(tmp_path, backend, True, U), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: list[torch.Tensor] = []
    with ctx:
        q = _src(Q, t, (H, 1, DH))
        k, v = _src(K, t, (H, DH)), _src(V, t, (H, DH))
        _masked_attention(q, k, v, t, form).sink_udf(
            lambda x: got.append(torch.from_dlpack(np.asarray(x) if not isinstance(
                x, torch.Tensor) else x).clone()))
    exe = ctx.compile({T: T_})
    exe.execute()
    tiled = [op for op in flat_ops(exe.sdg.ops.values()) if isinstance(op, ops.TiledAttentionOp)]
    assert len(tiled) == 1 and tiled[0].mask
    want = []
    for i in range(T_):
        s = torch.einsum("hd,shd->hs", torch.from_numpy(Q[i]), torch.from_numpy(K[: i + 1]))
        s = s * SCALE
        if form == "add":
            s = s + torch.from_numpy(BIAS[: i + 1])
        else:
            s = s.masked_fill(~torch.from_numpy(KEEP[: i + 1]), float("-inf"))
        want.append(torch.einsum("hs,shd->hd", torch.softmax(s, -1),
                                 torch.from_numpy(V[: i + 1])))
    torch.testing.assert_close(torch.stack(got).reshape(T_, H, DH), torch.stack(want),
                               rtol=1e-5, atol=1e-6)


def _np(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
@pytest.mark.parametrize("U", [4, 16])
def test_point_stored_keys_beside_block_stored_values(backend: str, U: int,
                                                      tmp_path: Any) -> None:
    """The keys are also read whole over two dims (`k[0:B, 0:T]`, sunk), so they keep a
    point store, read in blocks by a block reader; the values get a block store, whose
    blocks are min(U, T) = 11 rows for U = 16. The block reader cut the keys in blocks of
    U, so on numpy/jax a step paired 16 keys with 11 values ('operands could not be
    broadcast together with shapes (16,1,1) (11,2,4)'; accept6 c08 with dead-code elim
    off, whose extra key reader was an unused region). Both now cut blocks of min(U, T)."""
    B_ = 2
    ctx = TempoContext(_cfg(tmp_path, backend, True, U), num_dims=2)
    (b, B), (t, T) = ctx.variables_and_bounds
    got: list[Any] = []
    kept: list[Any] = []
    qs, ks, vs = (np.stack([a, a * 0.5 + 0.25]) for a in (Q, K, V))  # (B, T, H, DH)
    with ctx:
        q, k, v = (RT.const(a).index(0, b).index(0, t) for a in (qs, ks, vs))
        keys = k[b, 0: t + 1].permute((1, 2, 0))
        vals = v[b, 0: t + 1].permute((1, 0, 2))
        p = ((q.unsqueeze(1) @ keys) * SCALE).softmax(-1)
        (p.unsqueeze(-2) @ vals).sink_udf(lambda x: got.append(_np(x)))
        k[0:B, 0:T].sink_udf(lambda x: kept.append(_np(x)))
    exe = ctx.compile({B: B_, T: T_})
    exe.execute()
    tiled = [op for op in flat_ops(exe.sdg.ops.values()) if isinstance(op, ops.TiledAttentionOp)]
    assert len(tiled) == 1
    want = torch.stack([_eager(*(torch.from_numpy(a[i]) for a in (qs, ks, vs)), None)
                        for i in range(B_)])
    torch.testing.assert_close(torch.from_numpy(np.stack(got)).reshape(B_, T_, H, DH), want,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(kept[0], ks)
