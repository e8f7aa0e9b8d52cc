"""Movement primitives: ident, reshape, permute, expand, slice, pad, cat, flip.

Views (reshape, permute, expand) cost nothing; copies cost their bytes. Symbolic shape
dims and slice bounds arrive as trailing kernel args (`Op.runtime_exprs`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.autodiff.grad_rules import Grads, Gs, Xs, pad_back, unbroadcast, zeros_of
from tempo.api.tensor_base import record1
from tempo.compiler.op_rules import copies, free
from tempo.compiler.passes.vectorize_rules import Batching, lead, same
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.shape import Shape
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from tempo.runtime.kernel_registry import Kernel


@functools.lru_cache(maxsize=4096)
def pad_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """Source positions of a padded dim for the index-based modes (reflect, replicate),
    identical to torch's (reflect folds pads longer than n - 1); the pad kernels and the
    pad gradient both use it."""
    out = []
    for i in range(-before, n + after):
        if mode == "replicate":
            out.append(min(max(i, 0), n - 1))
        else:
            period = 2 * (n - 1) if n > 1 else 1
            j = abs(i) % period if n > 1 else 0
            out.append(period - j if j >= n else j)
    return np.asarray(out, dtype=np.int64)


# ---------------------------------------------------------------- gradients
def _perm_inverse(dims: Sequence[int]) -> list[int]:
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return inv


def slice_grad(op: ops.SliceOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None]
    return [pad_back(g, op.dim, op.start, xs[0].shape[op.dim], op.length)]


def pad_grad(op: ops.PadOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None]
    shape = list(xs[0].shape)
    if op.mode == "constant":
        for d, (before, _) in enumerate(op.padding):
            g = g.slice_dim(d, before, before + shape[d])
        return [g]
    for d in reversed(range(len(op.padding))):
        before, after = op.padding[d]
        if before or after:
            idx = pad_index(shape[d], before, after, op.mode).tolist()
            from tempo.api.ops.creation import const
            from tempo.api.ops.indexing_ops import index_add

            zshape = list(g.shape)
            zshape[d] = shape[d]
            z = zeros_of(Shape.from_(tuple(zshape)), g.dtype)
            g = index_add(z, d, const(idx, dtype=dtypes.int64), g)  # honours enable_index_ops
    return [g]


def cat_grad(op: ops.CatOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None] * len(xs)
    out: Grads = []
    start: Any = 0
    for x in xs:
        n = x.shape[op.dim]
        out.append(g.slice_dim(op.dim, start, start + n).cast(x.dtype))
        start = start + n
    return out


def ident_grad(op: ops.IdentOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    return [gs[0]]


def reshape_grad(op: ops.ReshapeOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    return [None if gs[0] is None else gs[0].reshape(tuple(xs[0].shape))]


def permute_grad(op: ops.PermuteOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    return [None if gs[0] is None else gs[0].permute(_perm_inverse(op.dims))]


def expand_grad(op: ops.ExpandOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    return [None if gs[0] is None else unbroadcast(gs[0], xs[0].shape)]


def flip_grad(op: ops.FlipOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    return [None if gs[0] is None else record1(ops.FlipOp, [gs[0]], dims=op.dims)]


# ---------------------------------------------------------------- kernels of every backend
def ident_kernel(op: ops.Op, be: Any) -> Kernel:
    """The identity (ident and merge on every backend)."""
    return lambda x: x


# ---------------------------------------------------------------- torch
def _torch_reshape(op: ops.ReshapeOp, be: Any) -> Kernel:
    """`torch.reshape(x, shape)`: the function parses a tuple shape faster than the method
    does (1.0 vs 1.7 us per call for a (64, 1, 64) view, one thread; `x.reshape(*shape)`
    1.2), and a PPO env step makes three."""
    import torch

    from tempo.runtime.backends.common import dynamic_shape, is_static

    reshape = torch.reshape
    if is_static(op.shape):
        shape = tuple(op.shape)
        return lambda x: reshape(x, shape)
    resolve = dynamic_shape(op.shape)
    return lambda x, *sym: reshape(x, resolve(*sym))


def _torch_permute(op: ops.PermuteOp, be: Any) -> Kernel:
    import torch

    return lambda x: torch.permute(x, op.dims)


def _torch_expand(op: ops.ExpandOp, be: Any) -> Kernel:
    """A static shape goes as separate sizes, which the method parses faster than a tuple
    (1.3 vs 1.8 us per call, one thread; `_torch_reshape`)."""
    from tempo.runtime.backends.common import dynamic_shape, is_static

    if is_static(op.shape):
        shape = tuple(op.shape)
        return (lambda x: x.expand(*shape)) if shape else (lambda x: x.expand(()))
    resolve = dynamic_shape(op.shape)
    return lambda x, *sym: x.expand(resolve(*sym))


def _torch_slice(op: ops.SliceOp, be: Any) -> Kernel:
    import torch

    dim, start, length = op.dim, op.start, op.length
    if isinstance(start, int) and isinstance(length, int):
        return lambda x: torch.narrow(x, dim, start, length)
    if isinstance(start, int):
        return lambda x, n: torch.narrow(x, dim, start, n)
    if isinstance(length, int):
        return lambda x, s: torch.narrow(x, dim, s, length)
    return lambda x, s, n: torch.narrow(x, dim, s, n)


def _torch_pad(op: ops.PadOp, be: Any) -> Kernel:
    import torch
    import torch.nn.functional as F  # noqa: N812

    if op.mode == "constant":
        def pad_const(x: torch.Tensor) -> torch.Tensor:
            flat: list[int] = []
            for d in reversed(range(x.ndim)):
                flat += list(op.padding[d]) if d < len(op.padding) else [0, 0]
            return F.pad(x, flat, mode="constant", value=op.value)

        return pad_const

    # (dim, its size) -> the gather positions on the device, made once: a host table
    # built and copied over at every call would make each step wait on the copy on a GPU
    tables: dict[tuple[int, int], torch.Tensor] = {}

    def positions(d: int, n: int, before: int, after: int) -> torch.Tensor:
        idx = tables.get((d, n))
        if idx is None:
            host = pad_index(n, before, after, op.mode)
            idx = tables[d, n] = torch.as_tensor(host, device=be.device)
        return idx

    def pad_gather(x: torch.Tensor) -> torch.Tensor:
        for d, (before, after) in enumerate(op.padding):
            if before or after:
                x = torch.index_select(x, d, positions(d, x.shape[d], before, after))
        return x

    return pad_gather


def _torch_cat(op: ops.CatOp, be: Any) -> Kernel:
    import torch

    return lambda *xs: torch.cat(xs, dim=op.dim)


def _torch_flip(op: ops.FlipOp, be: Any) -> Kernel:
    import torch

    return lambda x: torch.flip(x, op.dims)


# ---------------------------------------------------------------- jax and numpy (one array API)
def _array_shaped(op: ops.ReshapeOp | ops.ExpandOp, fn: Any, wrap: Any) -> Kernel:
    """`fn(x, shape)` (reshape, broadcast_to): static shapes bound once (and `wrap`ped, i.e.
    jitted on jax); symbolic dims arrive as trailing args and stay eager."""
    from tempo.runtime.backends.common import dynamic_shape, is_static

    if is_static(op.shape):
        shape = tuple(op.shape)
        return wrap(lambda x: fn(x, shape))
    resolve = dynamic_shape(op.shape)
    return lambda x, *sym: fn(x, resolve(*sym))


def _array_pad(op: ops.PadOp, xp: Any) -> Kernel:
    """The pad of numpy or jax.numpy (`xp`): constant by `pad`, reflect/replicate by
    gathering the `pad_index` positions."""
    padding = [tuple(p) for p in op.padding]
    if op.mode == "constant":
        value = op.value

        def pad_const(x: Any) -> Any:
            width = padding + [(0, 0)] * (x.ndim - len(padding))
            return xp.pad(x, width, mode="constant", constant_values=value)

        return pad_const
    mode = op.mode

    def pad_gather(x: Any) -> Any:
        for d, (before, after) in enumerate(padding):
            if before or after:
                x = xp.take(x, pad_index(x.shape[d], before, after, mode), axis=d)
        return x

    return pad_gather


def _jax(op: ops.Op, build: Any) -> Kernel:
    """`build(jnp, jit)`'s kernel, with `jit` sharing compilations across equal ops."""
    import jax.numpy as jnp

    from tempo.runtime.backends.jax import jit_shared

    return build(jnp, lambda f: jit_shared(op, f))


# ---------------------------------------------------------------- jax
def _jax_permute(op: ops.PermuteOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    from tempo.runtime.backends.jax import jit_shared

    dims = tuple(op.dims)
    return jit_shared(op, lambda x: jnp.transpose(x, dims))


def _jax_slice(op: ops.SliceOp, be: Any) -> Kernel:
    from jax import lax

    from tempo.runtime.backends.jax import jit_shared

    dim, start, length = op.dim, op.start, op.length
    if isinstance(start, int) and isinstance(length, int):
        return jit_shared(op, lambda x: lax.slice_in_dim(x, start, start + length, axis=dim))
    if isinstance(length, int):  # a traced start: one compilation for every t
        return jit_shared(op, lambda x, s: lax.dynamic_slice_in_dim(x, s, length, axis=dim))
    # the length is a shape: compiled once per distinct length
    sl = jit_shared(op, lambda x, s, n: lax.dynamic_slice_in_dim(x, s, n, axis=dim),
                    static_argnums=2)
    if isinstance(start, int):
        return lambda x, n: sl(x, start, n)
    return sl


def _jax_cat(op: ops.CatOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    from tempo.runtime.backends.jax import jit_shared

    dim = op.dim
    return jit_shared(op, lambda *xs: jnp.concatenate(xs, axis=dim))


def _jax_flip(op: ops.FlipOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    from tempo.runtime.backends.jax import jit_shared

    dims = tuple(op.dims)
    return jit_shared(op, lambda x: jnp.flip(x, dims))


# ---------------------------------------------------------------- numpy
def _np_permute(op: ops.PermuteOp, be: Any) -> Kernel:
    dims = tuple(op.dims)
    return lambda x: np.transpose(x, dims)


def _np_slice(op: ops.SliceOp, be: Any) -> Kernel:
    dim, start, length = op.dim, op.start, op.length
    pre = (slice(None),) * dim if dim >= 0 else (Ellipsis,)
    post = () if dim >= 0 else (slice(None),) * (-dim - 1)
    if isinstance(start, int) and isinstance(length, int):
        key = pre + (slice(start, start + length),) + post
        return lambda x: x[key]
    if isinstance(start, int):
        return lambda x, n: x[pre + (slice(start, start + n),) + post]
    if isinstance(length, int):
        return lambda x, s: x[pre + (slice(s, s + length),) + post]
    return lambda x, s, n: x[pre + (slice(s, s + n),) + post]


def _np_cat(op: ops.CatOp, be: Any) -> Kernel:
    dim = op.dim

    def cat(*xs: np.ndarray) -> np.ndarray:
        return np.concatenate(xs, axis=dim)

    return cat


def _np_flip(op: ops.FlipOp, be: Any) -> Kernel:
    dims = op.dims
    return lambda x: np.flip(x, dims).copy()  # a copy: no negative strides (DLPack)


# ---------------------------------------------------------------- registration
# ---------------------------------------------------------------- batching
# (vectorisation over a new leading dim D: the data dims shift by one)
def _batch_same(op: ops.Op, batched: list[bool], shapes: list[Shape], D: int,
                d: str) -> Batching | None:
    return same(op, 1) if batched[0] else None


def _batch_reshape(op: ops.ReshapeOp, batched: list[bool], shapes: list[Shape], D: int,
                   d: str) -> Batching | None:
    return same(replace(op, shape=op.shape.prepend_dim(D)), 1) if batched[0] else None


def _batch_permute(op: ops.PermuteOp, batched: list[bool], shapes: list[Shape], D: int,
                   d: str) -> Batching | None:
    return same(replace(op, dims=(0, *(x + 1 for x in op.dims))), 1) if batched[0] else None


def _batch_expand(op: ops.ExpandOp, batched: list[bool], shapes: list[Shape], D: int,
                  d: str) -> Batching | None:
    if not batched[0]:
        return None
    src, rank = shapes[0], len(op.shape)
    pre = lead(D, src, rank) if len(src) < rank else None
    return Batching(replace(op, shape=op.shape.prepend_dim(D)), (pre,))


def _batch_dim(op: Any, batched: list[bool], shapes: list[Shape], D: int,
               d: str) -> Batching | None:
    """Ops along one data dim (`dim`): it moves up by one."""
    return same(replace(op, dim=op.dim + 1), 1) if batched[0] else None


def _batch_pad(op: ops.PadOp, batched: list[bool], shapes: list[Shape], D: int,
               d: str) -> Batching | None:
    return same(replace(op, padding=((0, 0), *op.padding)), 1) if batched[0] else None


def _batch_cat(op: ops.CatOp, batched: list[bool], shapes: list[Shape], D: int,
               d: str) -> Batching | None:
    # an unbatched piece is broadcast to (D, ...) first (a view), then copied with the rest
    return Batching(replace(op, dim=op.dim + 1), (None,) * len(shapes),
                    expand=not all(batched))


def _batch_flip(op: ops.FlipOp, batched: list[bool], shapes: list[Shape], D: int,
                d: str) -> Batching | None:
    return same(replace(op, dims=tuple(x + 1 for x in op.dims)), 1) if batched[0] else None

primitive(ops.IdentOp, grad=ident_grad, batching=_batch_same, cost=free,
          torch=ident_kernel, jax=ident_kernel, numpy=ident_kernel)
primitive(ops.ReshapeOp, grad=reshape_grad, batching=_batch_reshape, cost=free,
          torch=_torch_reshape,
          jax=lambda op, be: _jax(op, lambda xp, jit: _array_shaped(op, xp.reshape, jit)),
          numpy=lambda op, be: _array_shaped(op, np.reshape, lambda f: f))
primitive(ops.PermuteOp, grad=permute_grad, batching=_batch_permute, cost=free,
          torch=_torch_permute, jax=_jax_permute, numpy=_np_permute)
primitive(ops.ExpandOp, grad=expand_grad, batching=_batch_expand, cost=free,
          torch=_torch_expand,
          jax=lambda op, be: _jax(op, lambda xp, jit: _array_shaped(op, xp.broadcast_to, jit)),
          numpy=lambda op, be: _array_shaped(op, np.broadcast_to, lambda f: f))
primitive(ops.SliceOp, grad=slice_grad, batching=_batch_dim, cost=free,
          torch=_torch_slice, jax=_jax_slice, numpy=_np_slice)
primitive(ops.PadOp, grad=pad_grad, batching=_batch_pad, cost=copies,
          torch=_torch_pad, jax=lambda op, be: _jax(op, lambda xp, jit: jit(_array_pad(op, xp))),
          numpy=lambda op, be: _array_pad(op, np))
primitive(ops.CatOp, grad=cat_grad, batching=_batch_cat, cost=copies,
          torch=_torch_cat, jax=_jax_cat, numpy=_np_cat)
primitive(ops.FlipOp, grad=flip_grad, batching=_batch_flip, cost=copies,
          torch=_torch_flip, jax=_jax_flip, numpy=_np_flip)
