"""The NumPy backend: the reference CPU backend. Its kernels (registered with each
primitive's other rules in `tempo.prims`) have the torch backend's semantics (Tempo's
dtype lattice, torch.sort/max index rules, torch.gather/scatter_add).

Inputs arrive in the dtypes the op computes in (the front end casts them once when it
records the op, `Op.input_dtypes`), so no kernel promotes: numpy's own promotion (int32 +
float32 is float64) never applies. Kernels always return arrays, never numpy scalars
(scalars do not export DLPack), and never negative-stride views (torch.from_dlpack aborts
on those).

bfloat16 is ml_dtypes' numpy dtype: its elementwise ufuncs compute in float32 and round
once, as torch's CPU kernels do, and sums accumulate in float32 (`prims.reduce.ACC`). The
products (matmul, conv, attention) take `in_float32`: numpy's bfloat16 matmul returns
float32 and its einsum refuses bfloat16, so they compute in float32 and round back once —
what torch does on the CPU (bfloat16 products accumulate in float32).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import numpy as np

from tempo.core import ops
from tempo.core.dtype import DataType
from tempo.runtime.backend_registry import DLBackend
from tempo.runtime.backends import common as c
from tempo.runtime.backends.blas_threads import blas_on_one_thread
from tempo.runtime.backends.devices import place
from tempo.runtime.backends.protocol import Kernel
from tempo.runtime.host_arrays import BF16, host_to_torch, torch_to_host
from tempo.runtime.kernel_registry import make_kernel


def _out_ellipsis_supported() -> bool:
    try:
        return isinstance(np.add(np.zeros(()), 0, out=...), np.ndarray)
    except TypeError:
        return False


_HAS_OUT_ELLIPSIS = _out_ellipsis_supported()
_BF16, _F32 = BF16, np.dtype(np.float32)


def in_float32(f: Kernel) -> Kernel:
    """`f`, computed in float32 and rounded back once when its first input is bfloat16
    (every input then is: `Op.input_dtypes`); other dtypes call `f` as is."""

    def run(*xs: Any) -> Any:
        if getattr(xs[0], "dtype", None) != _BF16:
            return f(*xs)
        up = [x.astype(_F32) if getattr(x, "dtype", None) == _BF16 else x for x in xs]
        return np.asarray(f(*up)).astype(_BF16)

    return run


def ufunc(f: Any) -> Kernel:
    """`f` returning 0-d arrays rather than numpy scalars (`out=...`, numpy >= 2.3)."""
    if _HAS_OUT_ELLIPSIS:
        return lambda *xs: f(*xs, out=...)
    return lambda *xs: np.asarray(f(*xs))


class NumpyBackend:
    """Kernels and array plumbing for NumPy (CPU only; a `Backend`)."""

    name: ClassVar[str] = "numpy"
    block_stores: ClassVar[bool] = True

    def __init__(self, dev: str = "cpu", seed: int = 0) -> None:
        place(dev, "numpy", 0)  # plain "gpu" warns and runs here; other GPU requests raise
        self.device = "cpu"
        self.on_cpu = True
        self.rng = np.random.Generator(np.random.PCG64(seed))

    @classmethod
    def from_config(cls, cfg: Any) -> NumpyBackend:
        return cls(dev=cfg.dev, seed=cfg.seed)

    # ---------------------------------------------------------------- plumbing
    def dtype(self, dt: DataType) -> np.dtype:
        return c.NP_OF[dt.name]

    def from_numpy(self, a: Any, dt: DataType) -> np.ndarray:
        return np.array(a, dtype=self.dtype(dt))

    def to_device(self, x: Any) -> np.ndarray:
        return user_array(x)

    def alloc_block(self, n: int, shape: tuple[int, ...], dt: DataType,
                    at_front: bool = True) -> np.ndarray:
        """An uninitialised buffer a block store fills slot by slot: (n, *shape), or exactly
        `shape` (which already holds n) when `at_front` is False."""
        return np.empty((n, *shape) if at_front else shape, dtype=self.dtype(dt))

    def stack(self, xs: Sequence[Any]) -> np.ndarray:
        return np.stack(xs)

    def sync(self) -> None:
        """NumPy is synchronous."""

    def running(self) -> AbstractContextManager[Any]:
        """BLAS on one thread while generated code runs (`backends.blas_threads`)."""
        return blas_on_one_thread()

    @staticmethod
    def move_to_front(x: np.ndarray, axis: int) -> np.ndarray:
        return np.moveaxis(x, axis, 0)

    @staticmethod
    def to_torch(x: Any) -> Any:
        x = np.asarray(x)
        if not x.flags.writeable or any(s < 0 for s in x.strides):
            x = np.array(x)  # torch cannot take negative strides; warns on read-only
        return host_to_torch(x)  # DLPack, or the bits of a bfloat16 (DLPack has none)

    @staticmethod
    def to_numpy(x: Any) -> np.ndarray:
        if hasattr(x, "detach"):  # torch: drop autograd, move to host first
            return torch_to_host(x)
        return np.asarray(x)

    @staticmethod
    def from_dlpack(x: Any) -> np.ndarray:
        if hasattr(x, "detach"):  # torch: drop autograd, move to host first
            return torch_to_host(x)
        return np.from_dlpack(x)

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
        """The op's kernel, registered with its other rules (`tempo.prims`)."""
        return make_kernel(op, self)


def user_array(r: Any, dt: np.dtype | None = None) -> np.ndarray:
    """A UDF result as an array we can store: torch tensors via DLPack, and no negative
    strides (a user's `x[::-1]` would make torch.from_dlpack abort the process)."""
    if hasattr(r, "detach"):
        r = torch_to_host(r)
    r = np.asarray(r, dtype=dt)
    return np.array(r) if any(s < 0 for s in r.strides) else r


DLBackend.register("numpy", NumpyBackend)
