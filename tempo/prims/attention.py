"""Attention as one primitive (`ops.AttentionOp`): softmax(scale * q @ k^T + mask) @ v.

torch runs `scaled_dot_product_attention` (one fused kernel, no (L, S) scores kept);
jax `jax.nn.dot_product_attention` inside one jit; numpy the composite.

The gradient is the closed form, recomputing the probabilities from the inputs (the
forward kept none of its intermediates):
p = softmax(s), s = scale * q k^T + mask;  dv = p^T g;  dp = g v^T;
ds = p * (dp - sum(dp * p, -1));  dq = scale * ds k;  dk = scale * ds^T q;  dmask = ds
(summed down to the mask's shape; a boolean mask has none).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.autodiff.grad_rules import Grads, Gs, Xs, unbroadcast
from tempo.api.tensor_base import record1
from tempo.compiler.op_rules import Arg, Cost, traffic
from tempo.compiler.passes.vectorize_rules import Batching, lead
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.errors import UnsupportedError
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor as RT
    from tempo.runtime.kernel_registry import Kernel


# ---------------------------------------------------------------- gradient
def _t(x: RT) -> RT:
    return x.transpose(-1, -2)


def _mm(a: RT, b: RT) -> RT:
    return record1(ops.MatMulOp, [a, b])


def causal_mask(L: int, S: int) -> np.ndarray:
    """True where query i may attend key j (j <= i), as torch's `is_causal`."""
    return np.tril(np.ones((L, S), dtype=bool))


def attention_probs(op: ops.AttentionOp, q: RT, k: RT, mask: RT | None) -> RT:
    """softmax(scale * q k^T + mask) from primitives (the gradient's recomputation)."""
    from tempo.api.ops import creation
    from tempo.api.ops.elementwise import where

    s = _mm(q, _t(k)) * op.scale
    neg = creation.const(-np.inf, dtype=s.dtype)
    if op.causal:
        L, S = q.shape[-2], k.shape[-2]
        if not (isinstance(L, int) and isinstance(S, int)):
            raise UnsupportedError(f"the gradient of causal attention needs static query and "
                                   f"key lengths, got {L} and {S} (pass a boolean mask)")
        s = where(creation.const(causal_mask(L, S)), s, neg)
    if mask is not None:
        s = where(mask, s, neg) if dtypes.is_bool(mask.dtype) else s + mask
    return s.softmax(-1)


def attention_grad(op: ops.AttentionOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    q, k, v = xs[:3]
    mask = xs[3] if op.masked else None
    if g is None:
        return [None] * len(xs)
    p = attention_probs(op, q, k, mask)
    dv = _mm(_t(p), g)
    dp = _mm(g, _t(v))
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    dq = _mm(ds, k) * op.scale
    dk = _mm(_t(ds), q) * op.scale
    grads: Grads = [dq, dk, dv]
    if mask is not None:
        grads.append(None if dtypes.is_bool(mask.dtype) else unbroadcast(ds, mask.shape))
    return grads


# ---------------------------------------------------------------- torch
def _torch_attention(op: ops.AttentionOp, be: Any) -> Kernel:
    import torch
    import torch.nn.functional as F  # noqa: N812

    sdpa, scale, causal = F.scaled_dot_product_attention, op.scale, op.causal
    if not op.masked:
        return lambda q, k, v: sdpa(q, k, v, scale=scale, is_causal=causal)
    if not causal:
        return lambda q, k, v, m: sdpa(q, k, v, attn_mask=m, scale=scale)

    def causal_masked(q: Any, k: Any, v: Any, m: Any) -> Any:
        # (torch takes a mask or is_causal, not both: the causal part joins the mask)
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        m = m & keep if m.dtype == torch.bool else m.masked_fill(~keep, float("-inf"))
        return sdpa(q, k, v, attn_mask=m, scale=scale)

    return causal_masked


# ---------------------------------------------------------------- jax
def _jax_attention(op: ops.AttentionOp, be: Any) -> Kernel:
    import jax
    import jax.numpy as jnp

    from tempo.runtime.backends.jax import jit_shared

    scale, causal = op.scale, op.causal
    fused = getattr(jax.nn, "dot_product_attention", None)

    def attend(q: Any, k: Any, v: Any, m: Any = None) -> Any:
        lead, (L, E), (S, Ev) = q.shape[:-2], q.shape[-2:], v.shape[-2:]
        keep = jnp.asarray(causal_mask(L, S)) if causal else None
        bias = None
        if m is not None:
            m = jnp.broadcast_to(m, (*lead, L, S))
            if m.dtype == jnp.bool_:
                keep = m if keep is None else keep & m
            else:
                bias = m
        if fused is None or not lead or E != Ev:  # (jax's needs one head size)
            s = jnp.einsum("...le,...se->...ls", q, k) * scale
            s = s if bias is None else s + bias
            s = s if keep is None else jnp.where(keep, s, -jnp.inf)
            return jnp.einsum("...ls,...sd->...ld", jax.nn.softmax(s, axis=-1), v)
        # (batch, seq, heads, dim) with every leading dim flattened into the heads
        def bthd(x: Any) -> Any:
            return jnp.swapaxes(x.reshape((-1, *x.shape[-2:])), 0, 1)[None]

        def bhls(x: Any) -> Any:
            return None if x is None else jnp.broadcast_to(x, (*lead, L, S)).reshape(
                (1, -1, L, S))

        o = fused(bthd(q), bthd(k), bthd(v), bias=bhls(bias), mask=bhls(keep), scale=scale)
        return jnp.swapaxes(o[0], 0, 1).reshape((*lead, L, Ev))

    return jit_shared(op, attend)


# ---------------------------------------------------------------- numpy
def np_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, m: Any, scale: float,
                 causal: bool) -> np.ndarray:
    """The numpy reference (the composite, stable softmax)."""
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * q.dtype.type(scale)
    neg = q.dtype.type(-np.inf)
    if causal:
        s = np.where(causal_mask(s.shape[-2], s.shape[-1]), s, neg)
    if m is not None:
        s = np.where(m, s, neg) if m.dtype == np.bool_ else s + m
    z = s - np.max(s, axis=-1, keepdims=True, initial=neg)  # (no keys: empty, as torch)
    e = np.exp(z)
    return np.matmul(e / np.sum(e, axis=-1, keepdims=True), v).astype(q.dtype, copy=False)


def _np_attention(op: ops.AttentionOp, be: Any) -> Kernel:
    from tempo.runtime.backends.numpy import in_float32

    scale, causal = op.scale, op.causal
    return in_float32(lambda q, k, v, m=None: np_attention(q, k, v, m, scale, causal))


# ---------------------------------------------------------------- batching, cost
def _batch_attention(op: ops.AttentionOp, batched: list[bool], shapes: list[Any], D: int,
                     d: str) -> Batching | None:
    """The new dim leads q, k and v (without a mask an unbatched one is broadcast to it
    first); a batched mask gets unit dims after it to broadcast as before, an unbatched
    one broadcasts as it is."""
    if not op.masked:
        return Batching(op, (None,) * 3, expand=not all(batched))
    if not all(batched[:3]):
        return None
    return Batching(op, (None, None, None,
                         lead(D, shapes[3], len(shapes[0])) if batched[3] else None))


def _attention_cost(op: ops.AttentionOp, ins: Sequence[Arg], outs: Sequence[Arg]) -> Cost:
    q, k, v = ins[:3]
    scores = q.numel // q.shape[-1] * k.shape[-2]
    return Cost(2 * scores * (q.shape[-1] + v.shape[-1]) + 5 * scores, traffic(ins, outs))


primitive(ops.AttentionOp, grad=attention_grad, batching=_batch_attention,
          cost=_attention_cost, torch=_torch_attention, jax=_jax_attention,
          numpy=_np_attention)
