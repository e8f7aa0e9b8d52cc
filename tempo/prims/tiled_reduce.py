"""Tiled reductions (`ops.TiledReduceOp`, made by the statify pass): a sum or a max over a
read whose length grows with a loop variable (`x[0:t+1]`, windows, the backward's
`g[t:T]`), the read arriving as static blocks `(block, start, stop)`.

Per block the op's elementwise body maps the blocks (and its static operands) to the value
to reduce; the block is reduced and accumulated: sums add, maxima keep the larger value and
the index of the first maximum within the read (ties go to the earlier block, NaN wins, as
torch's `max`). jax compiles one block step (`jit`, the valid rows and the block's offset in
the read as traced scalars: one compilation for every block of every step) and sets the
padding rows to the neutral element (0, or the dtype's minimum); numpy does the same
eagerly; torch (eager: shapes cost nothing) reduces the valid rows of each block as views.

The op is made after autodiff, so it has no gradient rule of its own (`NOT_DIFFERENTIABLE`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.autodiff.grad_rules import NOT_DIFFERENTIABLE
from tempo.compiler.op_rules import NO_BATCHING, Cost, traffic
from tempo.core import naming, ops
from tempo.core.dtype import is_float_np
from tempo.core.errors import ShapeError
from tempo.core.ops_region import RegionOp
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from tempo.runtime.kernel_registry import Kernel

Blocks = list[tuple[Any, int, int]]


def _cost(op: ops.TiledReduceOp, ins: Any, outs: Any) -> Cost:
    """The body's arithmetic and one compare or add per element of the blocks read."""
    n = math.prod(ins[0].shape) if ins[0].shape else 1
    return Cost(n * (1 + len(op.body)), traffic(ins, outs))


def _body(op: ops.TiledReduceOp, be: Any) -> Kernel:
    """The per-block value: the body as a region function (its members' kernels)."""
    if not op.body:
        k = op.result.output
        return lambda *ins: ins[k]
    from tempo.runtime.regions import region_kernel

    region = RegionOp(op_id=op.op_id, domain=op.domain, site=op.site, body=op.body,
                      reads=op.reads, outputs=(op.result,))
    return region_kernel(region, be, None)


def _blocks(ins: tuple, n: int) -> Iterator[tuple[list[Any], int, int, int]]:
    """Per block of the `n` block inputs: their arrays, the valid rows `s..e-1`, and how
    many rows of the read come before them."""
    base = 0
    for parts in zip(*ins[:n]):
        s, e = parts[0][1], parts[0][2]
        yield [b for b, _, _ in parts], s, e, base
        base += e - s


def _empty(op: ops.TiledReduceOp, xp: Any, dt: Any) -> Any:
    if op.kind == "max":
        raise ShapeError(f"{naming.at_site(op.site)} takes the max of a range of no points "
                         "(a read such as x[t + 1:T] at t = T - 1, or x[0:t] at t = 0): an "
                         "empty range has no largest element; keep at least one point in "
                         "it (e.g. x[t:T])", site=op.site)
    return xp.zeros(op.out_shape, dtype=dt)  # torch takes dtype by keyword only


# ---------------------------------------------------------------- torch
def _torch(op: ops.TiledReduceOp, be: Any) -> Kernel:
    import torch

    body, n, dims, keep, flat = _body(op, be), op.n_blocked, op.dims, op.keepdim, op.flat

    def run(*ins: Any) -> Any:
        acc: Any = None
        idx: Any = None
        for arrays, s, e, base in _blocks(ins, n):
            v = body(*[b[s:e] for b in arrays], *ins[n:])
            if op.kind == "sum":
                r = torch.sum(v, dim=dims, keepdim=keep, dtype=v.dtype)
                acc = r if acc is None else acc + r
            else:
                size = max(e - s, 1)
                v, step = (v.reshape(-1), v.numel() // size) if flat else (v, 1)
                bv, bi = torch.max(v, 0, keepdim=keep)
                bi = bi + base * step
                if acc is None:
                    acc, idx = bv, bi
                else:
                    take = (bv > acc) | (bv.isnan() & ~acc.isnan()) if bv.is_floating_point() \
                        else bv > acc
                    acc, idx = torch.where(take, bv, acc), torch.where(take, bi, idx)
        if acc is None:
            return _empty(op, torch, be.dtype(op.out_dtype))
        return (acc, idx) if op.kind == "max" else acc

    return run


# ---------------------------------------------------------------- jax / numpy (masked)
def _neutral(xp: Any, dt: Any) -> Any:
    dt = np.dtype(dt)
    if dt == np.bool_:
        return False
    return -np.inf if is_float_np(dt) else np.iinfo(dt).min


def _masked_step(xp: Any, op: ops.TiledReduceOp, body: Kernel) -> tuple[Kernel, Kernel]:
    """One block on static shapes: the body, the padding rows set to the neutral element,
    the block reduced and combined with the running result."""
    dims, keep, flat = op.dims, op.keepdim, op.flat

    def reduce_block(args: tuple, s: Any, e: Any, base: Any) -> tuple[Any, Any]:
        v = body(*args)
        u = v.shape[0]
        valid = ((xp.arange(u) >= s) & (xp.arange(u) < e)).reshape((u,) + (1,) * (v.ndim - 1))
        if op.kind == "sum":
            return xp.where(valid, v, xp.zeros((), v.dtype)).sum(
                axis=dims, keepdims=keep).astype(v.dtype), None
        v = xp.where(valid, v, xp.asarray(_neutral(xp, v.dtype), v.dtype))
        step = math.prod(v.shape[1:]) if flat else 1
        if flat:
            v = v.reshape(-1)
        bi = xp.argmax(v, axis=0, keepdims=keep)
        bv = xp.take_along_axis(v, bi if keep else xp.expand_dims(bi, 0), axis=0)
        bv = bv if keep else bv.squeeze(0)
        return bv, (bi + (base - s) * step).astype(np.int64)

    def first(*args: Any) -> Any:
        return reduce_block(args[:-3], *args[-3:])

    def step(acc: Any, idx: Any, *args: Any) -> Any:
        bv, bi = reduce_block(args[:-3], *args[-3:])
        if op.kind == "sum":
            return acc + bv, None
        take = bv > acc
        if is_float_np(bv.dtype):
            take = take | (xp.isnan(bv) & ~xp.isnan(acc))
        return xp.where(take, bv, acc), xp.where(take, bi, idx)

    return first, step


def _online(op: ops.TiledReduceOp, be: Any, xp: Any, jit: Any) -> Kernel:
    body = _body(op, be)
    first, step = _masked_step(xp, op, body)
    first_j, step_j = jit(first, "first"), jit(step, "step")
    n = op.n_blocked

    def run(*ins: Any) -> Any:
        acc: Any = None
        idx: Any = None
        for arrays, s, e, base in _blocks(ins, n):
            args = (*arrays, *ins[n:], s, e, base)
            if acc is None:
                acc, idx = first_j(*args)
            else:
                acc, idx = step_j(acc, idx, *args)
        if acc is None:
            return _empty(op, xp, be.dtype(op.out_dtype))
        return (acc, idx) if op.kind == "max" else acc

    return run


def _jax(op: ops.TiledReduceOp, be: Any) -> Kernel:
    import jax
    import jax.numpy as jnp

    from tempo.runtime.regions import structure_key

    key = (str(getattr(be, "device", "")), op.kind, op.dims, op.keepdim, op.flat, op.n_blocked,
           structure_key(RegionOp(op_id=0, domain=op.domain, body=op.body, reads=op.reads,
                                  outputs=(op.result,))))

    def jit(f: Any, part: str) -> Any:
        got = _JITS.get((key, part))
        if got is None:
            got = _JITS[(key, part)] = jax.jit(f)
        return got

    return _online(op, be, jnp, jit)


_JITS: dict[tuple, Any] = {}  # equal tiled reductions share one compiled step per shape


def _numpy(op: ops.TiledReduceOp, be: Any) -> Kernel:
    def quiet(f: Any, part: str) -> Any:
        def run(*args: Any) -> Any:
            with np.errstate(all="ignore"):  # padding rows, masked out
                return f(*args)

        return run

    return _online(op, be, np, quiet)


primitive(ops.TiledReduceOp, grad=NOT_DIFFERENTIABLE, batching=NO_BATCHING, cost=_cost,
          torch=_torch, jax=_jax, numpy=_numpy)
