"""Indexing primitives: index_select, gather, scatter_add, index_add (torch semantics on
every backend: integer indices, a 0-d index selects or adds one slice).

An index value outside its dimension is an error, as in torch (API.md: torch gather,
index_add, scatter_add): every backend raises IndexError, which the executor reports as a
BackendError naming the op and the user's line. The one torch exception is kept: a 0-d
index selects like `x.select(dim, i)` / `x[i]`, so -n..-1 count from the end. numpy would
wrap every negative index and jax would give NaN (or drop an add): numpy checks the
index on the host first (`check_index`); jax cannot raise from compiled code and a host
read per call would wait for the device, so its kernels compute a flag in the same call
and the run raises at its end (`runtime.backends.jax_index_checks`), having computed
from jax's fill value (NaN) there -- never another element's value (negative indices
are moved out of range first)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.autodiff.grad_rules import Grads, Gs, Xs, zeros_of
from tempo.api.ops.indexing_ops import index_add
from tempo.api.tensor_base import record1
from tempo.compiler.op_rules import Arg, Cost, copies, traffic
from tempo.compiler.passes.vectorize_rules import Batching, same
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tempo.runtime.kernel_registry import Kernel


# ---------------------------------------------------------------- gradients
def index_select_grad(op: ops.IndexSelectOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g, (x, idx) = gs[0], xs
    if g is None:
        return [None, None]
    if idx.ndim == 0:
        g, idx = g.unsqueeze(op.dim), idx.reshape((1,))
    z = zeros_of(x.shape, g.dtype)
    return [index_add(z, op.dim, idx.cast(dtypes.int64), g), None]


def gather_grad(op: ops.GatherOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None, None]
    z = zeros_of(xs[0].shape, g.dtype)
    return [record1(ops.ScatterAddOp, [z, xs[1].cast(dtypes.int64), g], dim=op.dim), None]


def scatter_add_grad(op: ops.ScatterAddOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None, None, None]
    return [g, None, record1(ops.GatherOp, [g, xs[1].cast(dtypes.int64)], dim=op.dim)]


def index_add_grad(op: ops.IndexAddOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None, None, None]
    src = g.index_select(op.dim, xs[1].cast(dtypes.int64))
    return [g, None, src * op.alpha if op.alpha != 1.0 else src]


# ---------------------------------------------------------------- torch
def _torch_index_select(op: ops.IndexSelectOp, be: Any) -> Kernel:
    """A 0-d index on the CPU selects a view (`x[t]` of a vectorised draw read in the step
    loop: one call, no copy; index_select + reshape + squeeze took ~4x as long), the index
    tensor passed as it is (select reads an integer tensor's value itself: 2.3 vs 2.9 us
    with int(i), one thread; a bool one it refuses, so that takes int(i)); out of range is
    select's IndexError either way. On a GPU the index stays on the device (reading it
    would synchronise)."""
    import torch

    dim, on_host = op.dim, be.on_cpu
    wide = (torch.int32, torch.int64)  # what torch.index_select takes; `const([1, 3])` is int8

    def kernel(x: Any, i: Any) -> Any:
        if i.ndim == 0:
            if on_host:
                try:
                    return x.select(dim, i)
                except (TypeError, RuntimeError):  # a bool (or float) 0-d index
                    return x.select(dim, int(i))
            i = i.reshape(-1)
            i = torch.where(i < 0, i + x.shape[dim], i)  # as select: -1 is the last
            return torch.index_select(x, dim, i if i.dtype in wide else i.long()).squeeze(dim)
        return torch.index_select(x, dim, i if i.dtype in wide else i.long())

    return kernel


def _torch_gather(op: ops.GatherOp, be: Any) -> Kernel:
    import torch

    return lambda x, i: torch.gather(x, op.dim, i.long())


def _torch_scatter_add(op: ops.ScatterAddOp, be: Any) -> Kernel:
    import torch

    return lambda x, i, s: torch.scatter_add(x, op.dim, i.long(), s)


def _torch_index_add(op: ops.IndexAddOp, be: Any) -> Kernel:
    import torch

    def index_add(x: torch.Tensor, i: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        if i.ndim == 0:  # a scalar index adds one slice: give it back its dim
            i, s = i.reshape(1), s.unsqueeze(op.dim)
        return torch.index_add(x, op.dim, i.long(), s, alpha=op.alpha)

    return index_add


# ---------------------------------------------------------------- jax
def _fit_to_index(x: Any, i: Any, dim: int) -> Any:
    """torch.gather/scatter allow an index smaller than the input off `dim`: crop to it
    (numpy and jax arrays alike)."""
    d = dim % x.ndim if x.ndim else 0
    if all(a == b for k, (a, b) in enumerate(zip(x.shape, i.shape)) if k != d):
        return x
    return x[tuple(slice(None) if k == d else slice(0, s) for k, s in enumerate(i.shape))]


def check_index(i: Any, n: int, dim: int, select: bool = False) -> None:
    """Raises torch's IndexError when a value of index `i` (a host or jax array) leaves
    0..n-1 along `dim`; a 0-d `select` index may also be -n..-1 (torch's x.select)."""
    a = np.asarray(i)
    if a.size == 0 or a.dtype == np.bool_:
        return
    lo, hi = a.min(), a.max()
    low = -n if select and a.ndim == 0 else 0
    if lo < low or hi >= n:
        bad = int(hi) if hi >= n else int(lo)
        raise IndexError(f"index {bad} is out of range for dimension {dim} with size {n}")


def _jax_checked(op: ops.Op, fn: Kernel, dim: int, select: bool = False) -> Kernel:
    """`fn(x, i, ...)` jitted with a flag "an index value leaves 0..n-1" (a 0-d select
    index also -n..-1) computed in the same call and left on the device: checked once
    per run (`runtime.backends.jax_index_checks`), or passed to the compiled function
    that traces this kernel."""
    import jax.numpy as jnp

    from tempo.runtime.backends import jax_index_checks as ixc
    from tempo.runtime.backends.jax import jit_shared

    def both(x: Any, i: Any, *rest: Any) -> tuple[Any, Any]:
        n = x.shape[dim] if x.ndim else 1
        low = -n if select and i.ndim == 0 else 0
        return fn(x, i, *rest), jnp.any((i < low) | (i >= n))

    j, named = jit_shared(op, both, part="flagged"), [op]

    def kernel(x: Any, i: Any, *rest: Any) -> Any:
        out, bad = j(x, i, *rest)
        ixc.defer(named, bad)
        return out

    return kernel


def _jax_outside(i: Any, n: int) -> Any:
    """Negative index values moved out of range (jax would count them from the end)."""
    import jax.numpy as jnp

    return jnp.where(i < 0, n, i)


def _jax_index_select(op: ops.IndexSelectOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    dim = op.dim

    def index_select(x: Any, i: Any) -> Any:
        return jnp.take(x, i if i.ndim == 0 else _jax_outside(i, x.shape[dim]), axis=dim)

    return _jax_checked(op, index_select, dim, select=True)


def _jax_gather(op: ops.GatherOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    dim = op.dim

    def gather(x: Any, i: Any) -> Any:
        return jnp.take_along_axis(_fit_to_index(x, i, dim), _jax_outside(i, x.shape[dim]),
                                   axis=dim)

    return _jax_checked(op, gather, dim)


def _jax_scatter_add(op: ops.ScatterAddOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    dim = op.dim

    def scatter_add(x: Any, i: Any, s: Any) -> Any:
        if i.ndim == 0:
            return x
        grid = list(jnp.indices(i.shape, sparse=True))
        grid[dim % i.ndim] = _jax_outside(i, x.shape[dim])
        return x.at[tuple(grid)].add(s[tuple(slice(0, n) for n in i.shape)], mode="drop")

    return _jax_checked(op, scatter_add, dim)


def _jax_index_add(op: ops.IndexAddOp, be: Any) -> Kernel:

    dim, alpha = op.dim, op.alpha

    def index_add(x: Any, i: Any, s: Any) -> Any:
        d = dim % max(x.ndim, 1)
        if alpha != 1:
            s = s * alpha
        key = (slice(None),) * d + (_jax_outside(i, x.shape[d]),)
        return x.at[key].add(s.astype(x.dtype), mode="drop")

    return _jax_checked(op, index_add, dim)


# ---------------------------------------------------------------- numpy
def _np_index_select(op: ops.IndexSelectOp, be: Any) -> Kernel:
    dim = op.dim

    def index_select(x: np.ndarray, i: np.ndarray) -> np.ndarray:
        check_index(i, x.shape[dim], dim, select=True)
        return np.take(x, i, axis=dim)  # a 0-d index removes the dim, as in torch

    return index_select


def _np_gather(op: ops.GatherOp, be: Any) -> Kernel:
    dim = op.dim

    def gather(x: np.ndarray, i: np.ndarray) -> np.ndarray:
        check_index(i, x.shape[dim], dim)
        return np.take_along_axis(_fit_to_index(x, i, dim), i, axis=dim)

    return gather


def scatter_coords(i: np.ndarray, dim: int) -> tuple[np.ndarray, ...]:
    """Full coordinates for torch.scatter_add: every index position, `dim` replaced by i."""
    grid: list[np.ndarray] = list(np.indices(i.shape, sparse=True))
    grid[dim % i.ndim] = i
    return tuple(grid)


def _np_scatter_add(op: ops.ScatterAddOp, be: Any) -> Kernel:
    dim = op.dim

    def scatter_add(x: np.ndarray, i: np.ndarray, s: np.ndarray) -> np.ndarray:
        out = np.array(x)
        if i.ndim == 0:
            return out
        check_index(i, x.shape[dim], dim)
        np.add.at(out, scatter_coords(i, dim), s[tuple(slice(0, n) for n in i.shape)])
        return out

    return scatter_add


def _np_index_add(op: ops.IndexAddOp, be: Any) -> Kernel:
    dim, alpha = op.dim, op.alpha

    def index_add(x: np.ndarray, i: np.ndarray, s: np.ndarray) -> np.ndarray:
        out = np.array(x)
        d = dim % max(x.ndim, 1)
        check_index(i, x.shape[d] if x.ndim else 1, d)
        if alpha != 1:
            s = (s * alpha).astype(x.dtype)
        key: Any = (slice(None),) * d + (i,)  # a 0-d index adds one slice
        np.add.at(out, key, s)
        return out

    return index_add


# ---------------------------------------------------------------- registration
def _accumulate_cost(op: Any, ins: Sequence[Arg], outs: Sequence[Arg]) -> Cost:
    """scatter_add/index_add: one add per source element (the sink is copied through)."""
    return Cost(ins[2].numel, traffic(ins, outs))


# ---------------------------------------------------------------- batching
def _batch_index_select(op: ops.IndexSelectOp, batched: list[bool], shapes: list[Any], D: int,
                        d: str) -> Batching | None:
    if batched[0] and not batched[1]:
        return same(replace(op, dim=op.dim + 1), 2)
    if not batched[0] and op.dim == 0 and len(shapes[1]) == 0:
        # one row of a fixed tensor per point (x[t], an unbatched value read at a symbol):
        # the D points' rows are index_select with the (D,) index, in point order
        return Batching(op, (None, None), addresses=(1,))
    return None  # a batched index into batched rows is a gather, not an index_select


def _batch_all_inputs(op: Any, batched: list[bool], shapes: list[Any], D: int,
                      d: str) -> Batching | None:
    """gather / scatter_add: every input batched (an unbatched index would need a copy);
    the index is input 1 of both."""
    if not all(batched):
        return None
    return Batching(replace(op, dim=op.dim + 1), (None,) * len(shapes), addresses=(1,))


def _batch_index_add(op: ops.IndexAddOp, batched: list[bool], shapes: list[Any], D: int,
                     d: str) -> Batching | None:
    if not (batched[0] and batched[2]) or batched[1]:
        return None
    return same(replace(op, dim=op.dim + 1), 3)

primitive(ops.IndexSelectOp, grad=index_select_grad, batching=_batch_index_select, cost=copies,
          torch=_torch_index_select, jax=_jax_index_select, numpy=_np_index_select)
primitive(ops.GatherOp, grad=gather_grad, batching=_batch_all_inputs, cost=copies,
          torch=_torch_gather, jax=_jax_gather, numpy=_np_gather)
primitive(ops.ScatterAddOp, grad=scatter_add_grad, batching=_batch_all_inputs,
          cost=_accumulate_cost,
          torch=_torch_scatter_add, jax=_jax_scatter_add, numpy=_np_scatter_add)
primitive(ops.IndexAddOp, grad=index_add_grad, batching=_batch_index_add, cost=_accumulate_cost,
          torch=_torch_index_add, jax=_jax_index_add, numpy=_np_index_add)
