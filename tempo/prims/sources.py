"""Sources: const, fill (zeros/ones/full), rand (uniform [0, 1)), eval_symbol.

None has inputs, so none has a gradient. Static values are built once, when the kernel is
made; symbolic fill/rand shapes arrive as trailing kernel args (`Op.runtime_exprs`). Random
draws come from the backend's generator, seeded by the config.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from tempo.api.autodiff.grad_rules import NOT_DIFFERENTIABLE
from tempo.compiler.op_rules import writes_outputs
from tempo.compiler.passes.vectorize_rules import Batching, same
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.index_expr import Symbol
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from tempo.runtime.kernel_registry import Kernel


def const_kernel(op: ops.ConstOp, be: Any) -> Kernel:
    """The value on the device once; every call returns it (every backend)."""
    value = be.from_numpy(op.value, op.dtype)
    return lambda: value


# ---------------------------------------------------------------- torch
def _torch_fill(op: ops.FillOp, be: Any) -> Kernel:
    import torch

    dt, dev, v = be.dtype(op.dtype), be.device, op.value
    static = [d for d in op.shape if isinstance(d, int)] == list(op.shape)
    if static:
        value = torch.full(tuple(op.shape), v, dtype=dt, device=dev)
        return lambda: value

    def fill(*sym: int) -> torch.Tensor:
        it = iter(sym)
        shape = tuple(d if isinstance(d, int) else next(it) for d in op.shape)
        return torch.full(shape, v, dtype=dt, device=dev)

    return fill


def _torch_rand(op: ops.RandOp, be: Any) -> Kernel:
    import torch

    from tempo.runtime.backends.common import dynamic_shape, is_static

    shape, dt, dev, gen = tuple(op.shape), be.dtype(op.dtype), be.device, be.generator
    if is_static(op.shape):
        return lambda: torch.rand(shape, dtype=dt, device=dev, generator=gen)
    resolve = dynamic_shape(op.shape)  # symbolic dims arrive as trailing args, like fill
    return lambda *sym: torch.rand(resolve(*sym), dtype=dt, device=dev, generator=gen)


def _torch_eval_symbol(op: ops.EvalSymbolOp, be: Any) -> Kernel:
    import torch

    dt, dev = be.dtype(op.dtype), be.device
    cache: dict[int, torch.Tensor] = {}  # torch.tensor() costs ~10 us; symbol values repeat

    def eval_symbol(v: int) -> torch.Tensor:
        x = cache.get(v)
        if x is None:
            x = cache[v] = torch.tensor(v, dtype=dt, device=dev)
        return x

    return eval_symbol


# ---------------------------------------------------------------- jax
def _jax_fill(op: ops.FillOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    from tempo.runtime.backends.common import dynamic_shape, is_static

    dt, v, dev = be.dtype(op.dtype), op.value, be.device
    if is_static(op.shape):
        value = jnp.full(tuple(op.shape), v, dtype=dt, device=dev)
        return lambda: value
    resolve = dynamic_shape(op.shape)
    return lambda *sym: jnp.full(resolve(*sym), v, dtype=dt, device=dev)


def _jax_rand(op: ops.RandOp, be: Any) -> Kernel:
    """One fresh key per call, split from the backend's key chain (seeded by the config)."""
    import jax

    from tempo.runtime.backends.common import dynamic_shape, is_static
    from tempo.runtime.backends.jax import jit_shared

    shape, dt = tuple(op.shape), be.dtype(op.dtype)
    if not is_static(op.shape):
        # symbolic dims arrive as trailing args, as torch/numpy take them (a dropout mask
        # over a growing attention window `0:t+1`); jit compiles once per concrete shape
        resolve = dynamic_shape(op.shape)

        def draw_dyn(key: Any, shp: tuple[int, ...]) -> tuple[Any, Any]:
            key, sub = jax.random.split(key)
            return key, jax.random.uniform(sub, shp, dtype=dt)

        jdyn = jit_shared(op, draw_dyn, "dynamic", static_argnums=(1,))

        def rand_dyn(*sym: Any) -> Any:
            be.key, x = jdyn(be.key, tuple(int(d) for d in resolve(*sym)))
            return x

        return rand_dyn

    def draw(key: Any) -> tuple[Any, Any]:
        key, sub = jax.random.split(key)
        return key, jax.random.uniform(sub, shape, dtype=dt)

    jdraw = jit_shared(op, draw)

    def rand() -> Any:
        be.key, x = jdraw(be.key)
        return x

    return rand


def _jax_eval_symbol(op: ops.EvalSymbolOp, be: Any) -> Kernel:
    import jax

    dt, dev = be.dtype(op.dtype), be.device
    cache: dict[int, Any] = {}  # loop counters repeat across iterations; arrays are immutable

    def eval_symbol(v: int) -> Any:
        x = cache.get(v)
        if x is None:
            x = cache[v] = jax.device_put(np.asarray(v, dtype=dt), dev)
        return x

    return eval_symbol


# ---------------------------------------------------------------- numpy
def _np_fill(op: ops.FillOp, be: Any) -> Kernel:
    from tempo.runtime.backends.common import dynamic_shape, is_static

    dt, v = be.dtype(op.dtype), op.value
    if is_static(op.shape):
        value = np.full(tuple(op.shape), v, dtype=dt)
        return lambda: value
    resolve = dynamic_shape(op.shape)
    return lambda *sym: np.full(resolve(*sym), v, dtype=dt)


def _np_rand(op: ops.RandOp, be: Any) -> Kernel:
    from tempo.runtime.backends.common import dynamic_shape

    dt, rng = be.dtype(op.dtype), be.rng
    resolve = dynamic_shape(op.shape)  # symbolic dims arrive as trailing args, like fill
    if dt in (np.float32, np.float64):
        return lambda *sym: rng.random(resolve(*sym), dtype=dt)
    # float16/bfloat16 (numpy draws neither): a float32 draw rounded to the nearest would
    # give 1.0 for draws in [1 - epsneg/2, 1) (one in 512 in bfloat16): keep it below 1
    below_one = np.asarray(1.0 - float(ml_dtypes.finfo(dt).epsneg), dtype=dt)
    return lambda *sym: np.minimum(rng.random(resolve(*sym), dtype=np.float32).astype(dt),
                                   below_one)


def _np_eval_symbol(op: ops.EvalSymbolOp, be: Any) -> Kernel:
    dt = be.dtype(op.dtype)
    return lambda v: np.array(v, dtype=dt)


# ---------------------------------------------------------------- batching
def _batch_rand(op: ops.RandOp, batched: list[bool], shapes: list[Any], D: int,
                d: str) -> Batching | None:
    """D independent draws in one call: the same distribution, another stream order."""
    return same(replace(op, shape=op.shape.prepend_dim(D)), 0)


def _batch_const(op: ops.ConstOp, batched: list[bool], shapes: list[Any], D: int,
                 d: str) -> Batching | None:
    """A constant left over a dim (folded there; a reader stacks it along the dim): its D
    copies as one constant, so that reader takes them at once."""
    value = np.ascontiguousarray(np.broadcast_to(op.value, (D, *op.value.shape)))
    return same(replace(op, value=value), 0)


def _batch_fill(op: ops.FillOp, batched: list[bool], shapes: list[Any], D: int,
                d: str) -> Batching | None:
    return same(replace(op, shape=op.shape.prepend_dim(D)), 0)


def _batch_eval_symbol(op: ops.EvalSymbolOp, batched: list[bool], shapes: list[Any], D: int,
                       d: str) -> Batching | None:
    """The values of `d` itself, all at once: the constant `0, 1, ..., D-1`."""
    sym = op.symbol
    if not (isinstance(sym, Symbol) and sym.name == d and len(op.domain) == 1):
        return None
    value = np.arange(D).astype(dtypes.to_np(op.dtype))
    return same(ops.ConstOp(op_id=op.op_id, domain=op.domain, value=value, dtype=op.dtype,
                            site=op.site), 0)

# ---------------------------------------------------------------- registration
primitive(ops.ConstOp, grad=NOT_DIFFERENTIABLE, batching=_batch_const, cost=writes_outputs,
          torch=const_kernel, jax=const_kernel, numpy=const_kernel)
primitive(ops.FillOp, grad=NOT_DIFFERENTIABLE, batching=_batch_fill, cost=writes_outputs,
          torch=_torch_fill, jax=_jax_fill, numpy=_np_fill)
primitive(ops.RandOp, grad=NOT_DIFFERENTIABLE, batching=_batch_rand, cost=writes_outputs,
          torch=_torch_rand, jax=_jax_rand, numpy=_np_rand)
primitive(ops.EvalSymbolOp, grad=NOT_DIFFERENTIABLE, batching=_batch_eval_symbol,
          cost=writes_outputs,
          torch=_torch_eval_symbol, jax=_jax_eval_symbol, numpy=_np_eval_symbol)
