"""Reductions and scans: sum, max (values, indices), cumsum, sort (values, indices).

Inputs arrive in their accumulation dtype (`SumOp.input_dtypes`); half floats accumulate
in float32 on jax and numpy, as torch does. Max and sort indices follow torch: the first
maximum (NaN wins), and a stable order in which equal elements keep their index order.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.autodiff.grad_rules import Grads, Gs, Xs, zeros_of
from tempo.api.tensor_base import record1
from tempo.compiler.op_rules import Arg, Cost, per_input_element, traffic
from tempo.compiler.passes.vectorize_rules import Batching, same
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tempo.runtime.kernel_registry import Kernel

_I64 = np.dtype(np.int64)
# accumulate half and bfloat16 in float, like torch (numpy/jax kernels; torch does it itself)
ACC = {np.dtype(np.float16): np.dtype(np.float32),
       dtypes.to_np(dtypes.bfloat16): np.dtype(np.float32)}


# ---------------------------------------------------------------- gradients
def select_grad(op: Any, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    """max/sort: the gradient goes to the selected positions (the indices output)."""
    g = gs[0]
    if g is None:
        return [None]
    idx = ys[1]
    if isinstance(op, ops.MaxOp) and not op.keepdim:
        g, idx = g.unsqueeze(op.dim), idx.unsqueeze(op.dim)
    z = zeros_of(xs[0].shape, g.dtype)
    return [record1(ops.ScatterAddOp, [z, idx, g], dim=op.dim)]


def sum_grad(op: ops.SumOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g, x = gs[0], xs[0]
    if g is None or not dtypes.is_float(x.dtype):
        return [None]
    if not op.keepdim:
        shape = [1 if i in op.dims else d for i, d in enumerate(x.shape)]
        g = g.reshape(tuple(shape))
    return [g.expand(tuple(x.shape))]


def cumsum_grad(op: ops.CumsumOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None]
    flip = record1(ops.FlipOp, [g], dims=(op.dim,))
    return [record1(ops.FlipOp, [flip.cumsum(op.dim)], dims=(op.dim,))]


# ---------------------------------------------------------------- torch
def _torch_sum(op: ops.SumOp, be: Any) -> Kernel:
    import torch

    if not op.dims:
        return lambda x: x
    # x arrives in its accumulation dtype (SumOp.input_dtypes): keep it (torch widens ints)
    return lambda x: torch.sum(x, dim=op.dims, keepdim=op.keepdim, dtype=x.dtype)


def _torch_max(op: ops.MaxOp, be: Any) -> Kernel:
    import torch

    return lambda x: tuple(torch.max(x, dim=op.dim, keepdim=op.keepdim))


def _torch_cumsum(op: ops.CumsumOp, be: Any) -> Kernel:
    import torch

    return lambda x: torch.cumsum(x, dim=op.dim, dtype=x.dtype)


def _torch_sort(op: ops.SortOp, be: Any) -> Kernel:
    import torch

    return lambda x: tuple(torch.sort(x, dim=op.dim, descending=op.descending,
                                      stable=op.stable))


# ---------------------------------------------------------------- jax
def _jax_sum(op: ops.SumOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    from tempo.runtime.backends.jax import jit_shared

    dims, keep = tuple(op.dims), op.keepdim  # x in its accumulation dtype already
    if not dims:
        return lambda x: x

    def sum_(x: Any) -> Any:
        dt = np.dtype(x.dtype)
        return jnp.sum(x, axis=dims, keepdims=keep, dtype=ACC.get(dt, dt)).astype(dt)

    return jit_shared(op, sum_)


def _jax_max(op: ops.MaxOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    from tempo.runtime.backends.jax import jit_shared

    dim, keep = op.dim, op.keepdim

    def max_(x: Any) -> tuple[Any, Any]:
        if x.ndim == 0:
            return x, jnp.zeros((), _I64)
        idx = jnp.argmax(x, axis=dim, keepdims=True)  # first max; NaN wins, as in torch
        vals = jnp.take_along_axis(x, idx, axis=dim)
        if not keep:
            idx, vals = jnp.squeeze(idx, dim), jnp.squeeze(vals, dim)
        return vals, idx.astype(_I64)

    return jit_shared(op, max_)


def _jax_cumsum(op: ops.CumsumOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    from tempo.runtime.backends.jax import jit_shared

    dim = op.dim

    def cumsum(x: Any) -> Any:
        dt = np.dtype(x.dtype)
        if x.ndim == 0:
            return x
        return jnp.cumsum(x, axis=dim, dtype=ACC.get(dt, dt)).astype(dt)

    return jit_shared(op, cumsum)


def _jax_sort(op: ops.SortOp, be: Any) -> Kernel:
    """Always stable (the only order we can reproduce); descending keeps equal elements in
    index order like torch: sort the reversed array ascending, then reverse back."""
    import jax.numpy as jnp
    from jax import lax

    from tempo.runtime.backends.jax import jit_shared

    dim, desc = op.dim, op.descending

    def sort(x: Any) -> tuple[Any, Any]:
        if x.ndim == 0:
            return x, jnp.zeros((), _I64)
        d = dim % x.ndim
        n = x.shape[d]
        iota = lax.broadcasted_iota(_I64, x.shape, d)
        if not desc:
            v, i = lax.sort((x, iota), dimension=d, is_stable=True, num_keys=1)
            return v, i
        v, i = lax.sort((jnp.flip(x, d), iota), dimension=d, is_stable=True, num_keys=1)
        return jnp.flip(v, d), (n - 1) - jnp.flip(i, d)

    return jit_shared(op, sort)


# ---------------------------------------------------------------- numpy
def _np_sum(op: ops.SumOp, be: Any) -> Kernel:
    """x arrives in its accumulation dtype (`SumOp.input_dtypes`); the result keeps it."""
    dims, keep = tuple(op.dims), op.keepdim
    if not dims:
        return lambda x: x

    def sum_(x: np.ndarray) -> np.ndarray:
        dt = x.dtype
        acc = ACC.get(dt, dt)
        r = np.asarray(np.sum(x, axis=dims, keepdims=keep, dtype=acc))
        return r if acc is dt else r.astype(dt)

    return sum_


def _np_max(op: ops.MaxOp, be: Any) -> Kernel:
    dim, keep = op.dim, op.keepdim

    def max_(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if x.ndim == 0:
            return x, np.zeros((), dtype=np.int64)
        idx = np.argmax(x, axis=dim, keepdims=True)  # first max; NaN wins, as in torch
        vals = np.take_along_axis(x, idx, axis=dim)
        if not keep:
            idx, vals = np.squeeze(idx, dim), np.squeeze(vals, dim)
        return vals, idx.astype(np.int64, copy=False)

    return max_


def _np_cumsum(op: ops.CumsumOp, be: Any) -> Kernel:
    dim = op.dim

    def cumsum(x: np.ndarray) -> np.ndarray:
        dt = x.dtype
        if x.ndim == 0:
            return x
        acc = ACC.get(dt, dt)
        r = np.cumsum(x, axis=dim, dtype=acc)
        return r if acc is dt else r.astype(dt)

    return cumsum


def sort_indices(x: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    """Stable argsort; descending keeps equal elements in index order, like torch's stable
    descending sort (sort the reversed array ascending, then reverse back)."""
    if not descending:
        return np.argsort(x, axis=dim, kind="stable")
    n = x.shape[dim]
    rev = np.argsort(np.flip(x, dim), axis=dim, kind="stable")
    return np.ascontiguousarray(np.flip((n - 1) - rev, dim))


def _np_sort(op: ops.SortOp, be: Any) -> Kernel:
    dim, desc = op.dim, op.descending

    def sort(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if x.ndim == 0:
            return x, np.zeros((), dtype=np.int64)
        idx = sort_indices(x, dim, desc)
        return np.take_along_axis(x, idx, axis=dim), idx.astype(np.int64, copy=False)

    return sort


# ---------------------------------------------------------------- registration
def _sort_cost(op: ops.SortOp, ins: Sequence[Arg], outs: Sequence[Arg]) -> Cost:
    """n log2 n comparisons per sorted row."""
    shape = ins[0].shape
    n = shape[op.dim] if shape else 1
    return Cost(int(ins[0].numel * max(math.log2(max(n, 1)), 1.0)), traffic(ins, outs))


# ---------------------------------------------------------------- batching
def _batch_sum(op: ops.SumOp, batched: list[bool], shapes: list[Any], D: int,
               d: str) -> Batching | None:
    return same(replace(op, dims=tuple(x + 1 for x in op.dims)), 1) if batched[0] else None


def _batch_dim(op: Any, batched: list[bool], shapes: list[Any], D: int,
               d: str) -> Batching | None:
    """max / cumsum / sort along `dim`: it moves up by one."""
    return same(replace(op, dim=op.dim + 1), 1) if batched[0] else None

primitive(ops.SumOp, grad=sum_grad, batching=_batch_sum, cost=per_input_element(1),
          torch=_torch_sum, jax=_jax_sum, numpy=_np_sum)
primitive(ops.MaxOp, grad=select_grad, batching=_batch_dim, cost=per_input_element(1),
          torch=_torch_max, jax=_jax_max, numpy=_np_max)
primitive(ops.CumsumOp, grad=cumsum_grad, batching=_batch_dim, cost=per_input_element(1),
          torch=_torch_cumsum, jax=_jax_cumsum, numpy=_np_cumsum)
primitive(ops.SortOp, grad=select_grad, batching=_batch_dim, cost=_sort_cost,
          torch=_torch_sort, jax=_jax_sort, numpy=_np_sort)
