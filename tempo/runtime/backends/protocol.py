"""`Backend`: the one interface the executor, stores and tests use of a deep-learning
backend (torch, jax, numpy), so nothing probes a backend with `getattr`.

Kernels see their inputs already in the dtypes the op computes in: the front end casts
them once, when it records the op (`Op.input_dtypes`), so no backend promotes dtypes.
Conversions are static (`DLBackend.get_backend("torch").from_dlpack(x)` works on the
class, as in the original); everything tied to a device or a seed is per instance.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from tempo.core import ops
from tempo.core.dtype import DataType
from tempo.runtime.kernel_registry import Kernel

if TYPE_CHECKING:
    import torch

    from tempo.core.configs import ExecutionConfig



@runtime_checkable
class Backend(Protocol):
    """A backend instance: a device, a random state and a kernel per primitive op."""

    name: ClassVar[str]
    block_stores: ClassVar[bool]
    """Whether arrays are writable in place, so block stores can preallocate them (jax's
    arrays are immutable: its tensors always use point stores)."""
    device: Any
    """The backend's device object (`backends.devices.place` maps the config's `dev`)."""
    on_cpu: bool
    """Tensors live in host memory and nothing pretends otherwise (not "fake-gpu"): a
    kernel may read a value on the host (`int(i)`) at no cost; on a GPU it would wait."""

    @classmethod
    def from_config(cls, cfg: ExecutionConfig) -> Backend:
        """The backend for `cfg`'s device, seed and backend-specific flags."""
        ...

    def kernel(self, op: ops.Op) -> Kernel:
        """The callable for `op`, with its parameters bound (BackendError if none)."""
        ...

    def running(self) -> AbstractContextManager[Any]:
        """The context the executor runs generated code in (torch: below its autograd
        dispatch keys, `backends.torch_autograd`; numpy: BLAS on one thread,
        `backends.blas_threads`; jax: nothing)."""
        ...

    # ---------------------------------------------------------------- tensors
    def dtype(self, dt: DataType) -> Any:
        """The backend's dtype object for `dt`."""
        ...

    def from_numpy(self, a: Any, dt: DataType) -> Any:
        """`a` as a backend tensor of dtype `dt` on this backend's device."""
        ...

    def to_device(self, x: Any) -> Any:
        """A tensor of any backend (or numpy) as a tensor of this one, on its device."""
        ...

    def alloc_block(self, n: int, shape: tuple[int, ...], dt: DataType,
                    at_front: bool = True) -> Any:
        """An uninitialised writable buffer: (n, *shape), or `shape` when not `at_front`
        (only if `block_stores`)."""
        ...

    def stack(self, xs: Sequence[Any]) -> Any:
        """Stack points along a new leading dim (executor reads of several points)."""
        ...

    def sync(self) -> None:
        """Wait for queued device work (timings)."""
        ...

    @staticmethod
    def move_to_front(x: Any, axis: int) -> Any:
        """A view of `x` with `axis` moved to dim 0."""
        ...

    @staticmethod
    def to_torch(x: Any) -> torch.Tensor:
        """A backend tensor as a torch tensor (DLPack: no copy on the same device)."""
        ...

    @staticmethod
    def to_numpy(x: Any) -> np.ndarray:
        """A backend tensor as a host numpy array."""
        ...

    @staticmethod
    def from_dlpack(x: Any) -> Any:
        """Any DLPack-exporting tensor (torch, jax, numpy) as a tensor of this backend."""
        ...

    @staticmethod
    def shape_of(x: Any) -> tuple[int, ...]:
        ...

    @staticmethod
    def dtype_name(x: Any) -> str:
        """The Tempo dtype name (`DataType.name`) of a backend tensor."""
        ...

    @staticmethod
    def nbytes(x: Any) -> int:
        ...


BackendClass = type[Backend]
