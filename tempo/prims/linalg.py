"""Linear algebra: matmul (torch.matmul semantics) and N-d convolution, optionally
transposed (torch's stride/padding/dilation/groups/output_padding).

float32 matmul and conv run at full precision on jax (no TF32 on GPU), agreeing with torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.autodiff.grad_rules import Grads, Gs, Xs, unbroadcast
from tempo.api.tensor_base import record1
from tempo.compiler.op_rules import NO_BATCHING, Arg, Cost, traffic
from tempo.compiler.passes.vectorize_rules import Batching, lead
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoError
from tempo.core.shape import Shape
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor as RT
    from tempo.runtime.kernel_registry import Kernel


# ---------------------------------------------------------------- gradients
def _mm(a: RT, b: RT) -> RT:
    return record1(ops.MatMulOp, [a, b])


def _t(x: RT) -> RT:
    return x.transpose(-1, -2)


def matmul_grad(op: ops.MatMulOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g, (a, b) = gs[0], xs
    if g is None:
        return [None, None]
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    if a.ndim == 1:
        g = g.unsqueeze(-2) if b.ndim > 1 else g.reshape((1,))
    if b.ndim == 1:
        g = g.unsqueeze(-1)
    da, db = _mm(g, _t(b2)), _mm(_t(a2), g)
    da = unbroadcast(da, a2.shape)
    db = unbroadcast(db, b2.shape)
    if a.ndim == 1:
        da = da.reshape(tuple(a.shape))
    if b.ndim == 1:
        db = db.reshape(tuple(b.shape))
    return [da, db]


def _conv(x: RT, w: RT, op: ops.ConvOp, stride: Sequence[int], padding: Sequence[int],
          dilation: Sequence[int], transposed: bool, out_pad: Sequence[int] = ()) -> RT:
    return record1(ops.ConvOp, [x, w], n_dims=op.n_dims, stride=tuple(stride),
                   padding=tuple(padding), dilation=tuple(dilation), transposed=transposed,
                   output_padding=tuple(out_pad), groups=op.groups)


def _static(shape: Shape, op: ops.ConvOp) -> list[int]:
    dims = list(shape)
    if not all(isinstance(d, int) for d in dims):
        raise TempoError(f"the gradient of {op!r} needs static shapes, got {shape}", site=op.site)
    return dims


def _conv_weight_grad(inp: RT, gout: RT, op: ops.ConvOp, k: Sequence[int]) -> RT:
    """d(conv(inp, w))/dw given the output grad `gout` (N, O, *Lout): a correlation of `inp`
    with `gout` in which batch and channels swap roles (the stride becomes the dilation and the
    dilation the stride), one group per conv group; the result is cropped to the kernel `k`."""
    n_sp, g = op.n_dims, op.groups
    n, c, *sp = _static(inp.shape, op)
    _, o, *sp_out = _static(gout.shape, op)
    cg, og = c // g, o // g
    spd = tuple(range(3, 3 + n_sp))
    xi = inp.reshape((n, g, cg, *sp)).permute((2, 1, 0, *spd)).reshape((cg, g * n, *sp))
    wi = gout.reshape((n, g, og, *sp_out)).permute((1, 2, 0, *spd)).reshape((o, n, *sp_out))
    dw = _conv(xi, wi, op, op.dilation, op.padding, op.stride, False)  # (cg, o, *k')
    dw = dw.permute((1, 0, *range(2, 2 + n_sp)))
    for i, kk in enumerate(k):
        if _static(dw.shape, op)[2 + i] != kk:
            dw = dw.slice_dim(2 + i, 0, kk)
    return dw


def conv_grad(op: ops.ConvOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    """conv: the input's grad is the transposed conv of the output grad with the same weight
    (output padding restoring the input size), the weight's a correlation (`_conv_weight_grad`).
    A transposed conv is the adjoint of the conv: the roles of the two convs swap."""
    g, (x, w) = gs[0], xs
    if g is None:
        return [None, None]
    k = _static(w.shape, op)[2:]
    if op.transposed:
        dx = _conv(g, w, op, op.stride, op.padding, op.dilation, False)
        dw = _conv_weight_grad(g, x, op, k)
    else:
        sp, sp_out = _static(x.shape, op)[2:], _static(g.shape, op)[2:]
        out_pad = [n - ((m - 1) * s - 2 * p + d * (kk - 1) + 1) for n, m, s, p, d, kk in
                   zip(sp, sp_out, op.stride, op.padding, op.dilation, k)]
        dx = _conv(g, w, op, op.stride, op.padding, op.dilation, True, out_pad)
        dw = _conv_weight_grad(x, g, op, k)
    return [dx if dtypes.is_float(x.dtype) else None, dw if dtypes.is_float(w.dtype) else None]


# ---------------------------------------------------------------- torch
def _torch_matmul(op: ops.MatMulOp, be: Any) -> Kernel:
    """torch.matmul, but a batched left operand times a matrix is always one mm over the
    rows: torch folds the batch only when the leading dims are contiguous, and otherwise
    (a broadcast observation, strides (1, 0, 0)) runs a bmm of B one-row products, 30x
    slower at (64, 1, 48) @ (48, 64) (measured: 790 vs 26 us). A contiguous left operand
    goes to torch.matmul directly (it folds it itself): the Python reshape/view around mm
    cost 44 vs 26 us per call at (64, 1, 64) @ (64, 64), one thread."""
    import torch

    mm, matmul = torch.mm, torch.matmul

    def kernel(a: Any, b: Any) -> Any:
        if a.is_contiguous() or a.dim() <= 2 or b.dim() != 2:
            return matmul(a, b)
        return mm(a.reshape(-1, a.shape[-1]), b).view(*a.shape[:-1], b.shape[1])

    return kernel


def _torch_conv(op: ops.ConvOp, be: Any) -> Kernel:
    import torch.nn.functional as F  # noqa: N812

    n = op.n_dims
    if op.transposed:
        tfn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[n]
        out_pad = op.output_padding or (0,) * n
        return lambda x, w: tfn(x, w, stride=op.stride, padding=op.padding,
                                output_padding=out_pad, groups=op.groups, dilation=op.dilation)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    return lambda x, w: fn(x, w, stride=op.stride, padding=op.padding,
                           dilation=op.dilation, groups=op.groups)


# ---------------------------------------------------------------- jax
def _jax_matmul(op: ops.MatMulOp, be: Any) -> Kernel:
    import jax.numpy as jnp
    from jax import lax

    from tempo.runtime.backends.jax import jit_shared

    return jit_shared(op, lambda a, b: jnp.matmul(a, b, precision=lax.Precision.HIGHEST))


def _jax_conv(op: ops.ConvOp, be: Any) -> Kernel:
    import jax.numpy as jnp
    from jax import lax

    from tempo.runtime.backends.jax import jit_shared
    from tempo.runtime.backends.numpy_conv import transposed_padding, transposed_weight

    n, groups, highest = op.n_dims, op.groups, lax.Precision.HIGHEST
    sp = "DHW"[3 - n:]
    dn = (f"NC{sp}", f"OI{sp}", f"NC{sp}")

    def conv(x: Any, w: Any) -> Any:
        if op.transposed:
            pads = transposed_padding(op, tuple(w.shape[2:]))
            return lax.conv_general_dilated(
                x, transposed_weight(w, groups, jnp), (1,) * n, pads,
                lhs_dilation=tuple(op.stride), rhs_dilation=tuple(op.dilation),
                dimension_numbers=dn, feature_group_count=groups, precision=highest)
        return lax.conv_general_dilated(
            x, w, tuple(op.stride), [(p, p) for p in op.padding],
            rhs_dilation=tuple(op.dilation), dimension_numbers=dn,
            feature_group_count=groups, precision=highest)

    return jit_shared(op, conv)


# ---------------------------------------------------------------- numpy
def _np_matmul(op: ops.MatMulOp, be: Any) -> Kernel:
    import numpy as np

    from tempo.runtime.backends.numpy import in_float32, ufunc

    return in_float32(ufunc(np.matmul))  # bfloat16: numpy's matmul would return float32


def _np_conv(op: ops.ConvOp, be: Any) -> Kernel:
    from tempo.runtime.backends.numpy import in_float32
    from tempo.runtime.backends.numpy_conv import conv_kernel

    return in_float32(conv_kernel(op))


# ---------------------------------------------------------------- registration
def _matmul_cost(op: ops.MatMulOp, ins: Sequence[Arg], outs: Sequence[Arg]) -> Cost:
    """2·k multiply-adds per output element (k: the contracted dim)."""
    a = ins[0].shape
    k = a[-1] if a else 1
    return Cost(2 * k * outs[0].numel, traffic(ins, outs))


def _conv_cost(op: ops.ConvOp, ins: Sequence[Arg], outs: Sequence[Arg]) -> Cost:
    """2 flops per weight element touched per output position: for a forward conv each
    output element sums C/g · prod(k) products; a transposed conv scatters each input
    element over O/g · prod(k) outputs."""
    w = ins[1].shape
    per_weight_row = ins[1].numel // max(w[0], 1)  # C/g · prod(k) (forward) / O/g · prod(k)
    if op.transposed:
        return Cost(2 * per_weight_row * ins[0].numel, traffic(ins, outs))
    return Cost(2 * per_weight_row * outs[0].numel, traffic(ins, outs))


# ---------------------------------------------------------------- batching
def _batch_matmul(op: ops.MatMulOp, batched: list[bool], shapes: list[Shape], D: int,
                  d: str) -> Batching | None:
    """D joins the matmul batch dims. A batched vector stays a vector only as the left
    operand of an unbatched matrix or vector ((D, K) @ (K, N) is D vector-matrix
    products); any other batched vector has no batched matmul form without a squeeze.
    (Conv has no batching rule: it keeps its loop.)"""
    (a, b), (ba, bb) = shapes, batched
    if (bb and len(b) == 1) or (ba and len(a) == 1 and (bb or len(b) > 2)):
        return None
    batch = max(len(a), len(b))
    return Batching(op, tuple(lead(D, s, batch) if flag and 2 <= len(s) < batch else None
                              for s, flag in ((a, ba), (b, bb))))

primitive(ops.MatMulOp, grad=matmul_grad, batching=_batch_matmul, cost=_matmul_cost,
          torch=_torch_matmul, jax=_jax_matmul, numpy=_np_matmul)
primitive(ops.ConvOp, grad=conv_grad, batching=NO_BATCHING, cost=_conv_cost,
          torch=_torch_conv, jax=_jax_conv, numpy=_np_conv)
