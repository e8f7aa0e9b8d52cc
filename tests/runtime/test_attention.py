"""Attention is one primitive (`scaled_dot_product_attention`, ops.AttentionOp): values and
gradients of q, k, v (and a float mask) equal torch eager's F.scaled_dot_product_attention
under autograd, on torch, jax and numpy; batched over a temporal dim it agrees too."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

import tempo.api.recurrent_tensor as tpo
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import ops
from tempo.core.configs import ExecutionConfig

RNG = np.random.default_rng(3)
B, H, L, S, E, EV = 2, 3, 5, 6, 4, 7
Q = RNG.standard_normal((B, H, L, E)).astype(np.float32)
K = RNG.standard_normal((B, H, S, E)).astype(np.float32)
V = RNG.standard_normal((B, H, S, EV)).astype(np.float32)
C = RNG.standard_normal((B, H, L, EV)).astype(np.float32)  # loss weights
BOOL = RNG.random((L, S)) > 0.3
BOOL[:, 0] = True  # every query attends something
FLOAT = RNG.standard_normal((H, L, S)).astype(np.float32)

CASES = {  # name -> (mask, is_causal, key length, value size: jax's fused kernel needs E)
    "plain": (None, False, S, EV),
    "bool_mask": (BOOL, False, S, E),
    "float_mask": (FLOAT, False, S, E),
    "causal": (None, True, L, EV),
    "causal_and_mask": (BOOL[:, :L], True, L, E),
}


def _cfg(backend: str, tmp_path) -> ExecutionConfig:  # noqa: ANN001
    return dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend,
                               path=str(tmp_path) + "/")


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
@pytest.mark.parametrize("case", list(CASES))
def test_attention_values_and_grads_match_torch(case: str, backend: str, tmp_path) -> None:  # noqa: ANN001
    mask, causal, s, ev = CASES[case]
    k_np, v_np, c = K[:, :, :s], V[:, :, :s, :ev], C[..., :ev]
    ctx = TempoContext(_cfg(backend, tmp_path), num_dims=0)
    with ctx:
        q, k, v = (RT.const(a, requires_grad=True) for a in (Q, k_np, v_np))
        m = None if mask is None else RT.const(mask, requires_grad=mask.dtype != np.bool_)
        y = tpo.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal,
                                             scale=0.3)
        (y * RT.const(c)).sum().backward()
    assert sum(isinstance(op, ops.AttentionOp) for op in ctx.sdg.ops.values()) == 1
    exe = ctx.compile({})
    exe.execute()

    tq, tk, tv = (torch.from_numpy(a.copy()).requires_grad_(True) for a in (Q, k_np, v_np))
    tm = None if mask is None else torch.from_numpy(mask.copy())
    if tm is not None and tm.dtype != torch.bool:
        tm.requires_grad_(True)
    if causal and tm is not None:  # torch takes one of the two: join them
        want = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm & torch.ones(
            L, s, dtype=torch.bool).tril(), scale=0.3)
    else:
        want = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, is_causal=causal,
                                              scale=0.3)
    (want * torch.from_numpy(c)).sum().backward()
    torch.testing.assert_close(exe.get_spatial_tensor_torch(y.tensor_id), want.detach(),
                               rtol=1e-5, atol=1e-5)
    for ours, theirs in ((q, tq), (k, tk), (v, tv)) + (
            ((m, tm),) if tm is not None and tm.requires_grad else ()):
        torch.testing.assert_close(exe.get_spatial_tensor_torch(ours.grad.tensor_id),
                                   theirs.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_attention_over_a_temporal_dim_matches_torch(backend: str, tmp_path) -> None:  # noqa: ANN001
    """q varies over t (vectorisation may batch it), k and v are shared."""
    T = 4
    qs = RNG.standard_normal((T, H, L, E)).astype(np.float32)
    cfg = dataclasses.replace(_cfg(backend, tmp_path), enable_vectorization=True)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, TT),) = ctx.variables_and_bounds
    got: list[torch.Tensor] = []
    with ctx:
        q = RT.source_with_ts_udf(lambda ts: qs[ts[t]], (H, L, E), "float32", domain=(t,))
        y = tpo.scaled_dot_product_attention(q, RT.const(K[0]), RT.const(V[0]),
                                             attn_mask=RT.const(BOOL))
        y.sink_udf(lambda a: got.append(torch.as_tensor(np.asarray(a)).clone()))
    exe = ctx.compile({TT: T})
    exe.execute()
    want = F.scaled_dot_product_attention(torch.from_numpy(qs), torch.from_numpy(K[0]),
                                          torch.from_numpy(V[0]),
                                          attn_mask=torch.from_numpy(BOOL))
    torch.testing.assert_close(torch.stack(got), want, rtol=1e-5, atol=1e-5)
