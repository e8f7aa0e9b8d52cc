"""The JAX backend: devices, the key chain, array plumbing, and `jit_shared`, which the
jax kernels (registered with each primitive's other rules in `tempo.prims`) are built on.

Most kernels are `jax.jit`-compiled closures over the op's parameters: a jitted call
costs about the same as one eager jnp call (measured ~6 µs for a (4,) add on CPU), and
everything that depends only on shapes (pad index maps, crops) then runs once at trace
time instead of on every call. Inputs arrive in the dtypes the op computes in (the front
end casts them when it records the op, `Op.input_dtypes`): no kernel promotes.
Kernels whose arguments are shapes (dynamic reshape/expand/slice lengths) stay eager.

64-bit types need `jax_enable_x64` (on by default, as `ExecutionConfig.enable_x64`);
without it max/sort indices could not be int64.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from tempo.core import ops
from tempo.core.dtype import DataType, dtypes
from tempo.core.errors import UnsupportedError
from tempo.runtime.backend_registry import DLBackend
from tempo.runtime.backends import common as c
from tempo.runtime.backends.devices import place
from tempo.runtime.backends.protocol import Kernel
from tempo.runtime.host_arrays import torch_to_host
from tempo.runtime.kernel_registry import make_kernel


class JaxBackend:
    """Kernels and array plumbing for JAX on CPU or GPU (a `Backend`)."""

    name: ClassVar[str] = "jax"
    block_stores: ClassVar[bool] = False  # jax arrays are immutable: point stores only

    def __init__(self, dev: str = "cpu", seed: int = 0, enable_x64: bool = True) -> None:
        jax.config.update("jax_enable_x64", enable_x64)
        placement = place(dev, "jax", _gpu_count())
        self.device = (jax.devices("cpu")[0] if placement.index is None
                       else jax.devices("gpu")[placement.index])
        self.on_cpu = placement.host_shortcuts
        self.key = jax.device_put(jax.random.key(seed), self.device)

    @classmethod
    def from_config(cls, cfg: Any) -> JaxBackend:
        """All the config says about this backend (the executor passes only dev and seed)."""
        return cls(dev=cfg.dev, seed=cfg.seed, enable_x64=cfg.enable_x64)

    # ---------------------------------------------------------------- plumbing
    def dtype(self, dt: DataType) -> np.dtype:
        return c.NP_OF[dt.name]

    def from_numpy(self, a: Any, dt: DataType) -> jax.Array:
        return jax.device_put(np.asarray(a, dtype=self.dtype(dt)), self.device)

    def to_device(self, x: Any) -> jax.Array:
        if hasattr(x, "detach"):  # torch
            x = JaxBackend.from_dlpack(x)
        return jax.device_put(x, self.device)

    def alloc_block(self, n: int, shape: tuple[int, ...], dt: DataType,
                    at_front: bool = True) -> Any:
        raise UnsupportedError("jax arrays are immutable: the jax backend has no block stores")

    def stack(self, xs: Sequence[Any]) -> jax.Array:
        if self.on_cpu:  # host stacking: no XLA compilation per distinct count of xs
            return jax.device_put(np.stack([np.asarray(x) for x in xs]), self.device)
        return jnp.stack(list(xs))

    def sync(self) -> None:
        jax.effects_barrier()
        jax.device_put(0, self.device).block_until_ready()

    @staticmethod
    def move_to_front(x: Any, axis: int) -> jax.Array:
        return jnp.moveaxis(x, axis, 0)

    @staticmethod
    def to_torch(x: Any) -> Any:
        import torch

        return torch.from_dlpack(x)

    @staticmethod
    def to_numpy(x: Any) -> np.ndarray:
        if hasattr(x, "detach"):  # torch
            return torch_to_host(x)
        return np.asarray(x)

    @staticmethod
    def from_dlpack(x: Any) -> jax.Array:
        if hasattr(x, "detach"):  # torch: drop autograd first
            x = x.detach()
        return jnp.from_dlpack(x)

    @staticmethod
    def shape_of(x: Any) -> tuple[int, ...]:
        return tuple(x.shape)

    @staticmethod
    def dtype_name(x: Any) -> str:
        return c.NAME_OF_NP[np.dtype(x.dtype)]

    @staticmethod
    def nbytes(x: Any) -> int:
        return int(x.nbytes)

    def kernel(self, op: ops.Op) -> Kernel:
        """The op's kernel, registered with its other rules (`tempo.prims`); most jax
        kernels are `jit_shared` closures over the op's parameters."""
        return make_kernel(op, self)

    def running(self) -> AbstractContextManager[Any]:
        """Around generated code (`Backend.running`): the run's index flags are read once
        at its end (`jax_index_checks`)."""
        return _checked_run()


@contextmanager
def _checked_run() -> Iterator[None]:
    from tempo.runtime.backends import jax_index_checks as ixc

    outer = ixc.take_pending()  # (a run inside a user function of another run)
    try:
        yield
        ixc.check_pending()
    finally:
        ixc.take_pending()
        ixc.restore_pending(outer)


def _gpu_count() -> int:
    try:
        return len(jax.devices("gpu"))
    except RuntimeError:  # no GPU platform in this jaxlib, or no device
        return 0


# ---------------------------------------------------------------- shared jit
_JITS: dict[tuple, Kernel] = {}
_NOT_PARAMS = frozenset({"op_id", "domain", "site", "tags"})


def jit_shared(op: ops.Op, fn: Kernel, part: str = "", **jit_kw: Any) -> Kernel:
    """`jax.jit(fn)`, shared by every op with the same parameters: jax caches compiled code
    per jitted function, so sharing keeps compilations to one per distinct (op parameters,
    input shapes) instead of one per op instance (the compile time was 3x the torch run).
    `part` names one of several functions a kernel compiles (e.g. a tiled op's steps)."""
    params = tuple((f.name, c.plain_key(getattr(op, f.name))) for f in dataclasses.fields(op)
                   if f.name not in _NOT_PARAMS)
    key = (op.name, part, params, dtypes.default_float.name, dtypes.default_int.name,
           tuple(sorted(jit_kw.items())))
    j = _JITS.get(key)
    if j is None:
        j = _JITS[key] = jax.jit(fn, **jit_kw)
    return j


DLBackend.register("jax", JaxBackend)
