"""Fused composites: softmax / log-softmax along a dim and RMS / layer norm over the
trailing dims (op classes in `tempo.core.ops_fused`), each one backend call:
`torch.softmax` / `F.rms_norm` / `F.layer_norm` on torch, one jitted function on jax, a
numpy reference.

Their gradients are the closed forms, built from primitives and reading the fused output
(not the composite's exp/sum/max intermediates):
softmax  dx = y * (g - sum(g * y))          log-softmax  dx = g - exp(y) * sum(g)
rms norm dx = r * (g - y * mean(g * y))     layer norm   dx = r * (g - mean(g) - y * mean(g * y))
with r = 1 / sqrt(mean(x_c²) + eps), x_c = x (centred for layer norm).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.autodiff.grad_rules import Grads, Gs, Xs
from tempo.compiler.op_rules import per_input_element
from tempo.compiler.passes.vectorize_rules import Batching, same
from tempo.core import ops
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor as RT
    from tempo.runtime.kernel_registry import Kernel


# ---------------------------------------------------------------- gradients
def softmax_grad(op: ops.SoftmaxOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g, y, d = gs[0], ys[0], op.dim
    if g is None:
        return [None]
    if op.log:
        return [g - y.exp() * g.sum(d, keepdim=True)]
    return [y * (g - (g * y).sum(d, keepdim=True))]


def _trailing(x: RT, n: int) -> tuple[int, ...]:
    return tuple(range(x.ndim - n, x.ndim))


def norm_grad(op: ops.NormOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g, x, y = gs[0], xs[0], ys[0]
    if g is None:
        return [None]
    dims = _trailing(x, op.n_dims)
    xc = x - x.mean(dims, keepdim=True) if op.center else x
    r = ((xc * xc).mean(dims, keepdim=True) + op.eps).sqrt().reciprocal()
    inner = g - y * (g * y).mean(dims, keepdim=True)
    if op.center:
        inner = inner - g.mean(dims, keepdim=True)
    return [r * inner]


# ---------------------------------------------------------------- torch
def _torch_softmax(op: ops.SoftmaxOp, be: Any) -> Kernel:
    import torch

    fn, dim = (torch.log_softmax if op.log else torch.softmax), op.dim
    return lambda x: fn(x, dim)


def _torch_norm(op: ops.NormOp, be: Any) -> Kernel:
    import torch.nn.functional as F  # noqa: N812

    n, eps = op.n_dims, op.eps
    fn = F.layer_norm if op.center else F.rms_norm
    return lambda x: fn(x, x.shape[x.ndim - n:], eps=eps)


# ---------------------------------------------------------------- jax
def _jax_softmax(op: ops.SoftmaxOp, be: Any) -> Kernel:
    import jax

    from tempo.runtime.backends.jax import jit_shared

    fn, dim = (jax.nn.log_softmax if op.log else jax.nn.softmax), op.dim
    return jit_shared(op, lambda x: fn(x, axis=dim))


def _jax_norm(op: ops.NormOp, be: Any) -> Kernel:
    import jax.numpy as jnp
    from jax import lax

    from tempo.runtime.backends.jax import jit_shared

    n, eps, center = op.n_dims, op.eps, op.center

    def norm(x: Any) -> Any:
        axes = tuple(range(x.ndim - n, x.ndim))
        xc = x - jnp.mean(x, axis=axes, keepdims=True) if center else x
        return xc * lax.rsqrt(jnp.mean(xc * xc, axis=axes, keepdims=True) + eps)

    return jit_shared(op, norm)


# ---------------------------------------------------------------- numpy
def np_softmax(x: np.ndarray, dim: int, log: bool) -> np.ndarray:
    """The numpy reference (stable): shift by the max, normalise by the sum. An empty dim
    (attention over `k[0:t]` at t = 0) gives an empty result, as torch and jax do."""
    if x.shape[dim] == 0:
        return x.copy()
    z = x - np.max(x, axis=dim, keepdims=True)
    if log:
        return z - np.log(np.sum(np.exp(z), axis=dim, keepdims=True))
    e = np.exp(z)
    return e / np.sum(e, axis=dim, keepdims=True)


def np_norm(x: np.ndarray, n: int, eps: float, center: bool) -> np.ndarray:
    axes = tuple(range(x.ndim - n, x.ndim))
    xc = x - np.mean(x, axis=axes, keepdims=True) if center else x
    var = np.mean(xc * xc, axis=axes, keepdims=True)
    return (xc / np.sqrt(var + x.dtype.type(eps))).astype(x.dtype, copy=False)


def _np_softmax(op: ops.SoftmaxOp, be: Any) -> Kernel:
    dim, log = op.dim, op.log
    return lambda x: np_softmax(x, dim, log)


def _np_norm(op: ops.NormOp, be: Any) -> Kernel:
    n, eps, center = op.n_dims, op.eps, op.center
    return lambda x: np_norm(x, n, eps, center)


# ---------------------------------------------------------------- batching
def _batch_softmax(op: ops.SoftmaxOp, batched: list[bool], shapes: list[Any], D: int,
                   d: str) -> Batching | None:
    """Along the same data dim, one up (a dim counted from the end stays as it is)."""
    return same(replace(op, dim=op.dim + 1 if op.dim >= 0 else op.dim), 1) if batched[0] else None


def _batch_norm(op: ops.NormOp, batched: list[bool], shapes: list[Any], D: int,
                d: str) -> Batching | None:
    """Over the same last dims: the leading D is one more outer dim."""
    return same(op, 1) if batched[0] else None


# ---------------------------------------------------------------- registration
primitive(ops.SoftmaxOp, grad=softmax_grad, batching=_batch_softmax, cost=per_input_element(5),
          torch=_torch_softmax, jax=_jax_softmax, numpy=_np_softmax)
primitive(ops.NormOp, grad=norm_grad, batching=_batch_norm, cost=per_input_element(5),
          torch=_torch_norm, jax=_jax_norm, numpy=_np_norm)
