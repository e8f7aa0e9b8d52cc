"""The PyTorch backend: devices, dtypes, tensor plumbing. Its kernels are registered with
each primitive's other rules (`tempo.prims`, `tempo.runtime.kernel_registry`)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import numpy as np
import torch

from tempo.core import ops
from tempo.core.dtype import DataType
from tempo.runtime.backend_registry import DLBackend
from tempo.runtime.backends.devices import place
from tempo.runtime.backends.host_memory import keep_freed_host_memory
from tempo.runtime.backends.protocol import Kernel
from tempo.runtime.backends.torch_autograd import below_autograd
from tempo.runtime.host_arrays import BF16, host_to_torch, torch_to_host
from tempo.runtime.kernel_registry import make_kernel

_DTYPES: dict[str, torch.dtype] = {
    "bool": torch.bool, "char": torch.int8, "unsigned char": torch.uint8, "short": torch.int16,
    "unsigned short": torch.uint16, "int": torch.int32, "unsigned int": torch.uint32,
    "long": torch.int64, "unsigned long": torch.uint64, "half": torch.float16,
    "bfloat16": torch.bfloat16,
    "float": torch.float32,
    "double": torch.float64,
}

_NAME_OF: dict[torch.dtype, str] = {v: k for k, v in _DTYPES.items()}


class TorchBackend:
    """Kernels and tensor plumbing for PyTorch on CPU or CUDA (a `Backend`)."""

    name: ClassVar[str] = "torch"
    block_stores: ClassVar[bool] = True

    def __init__(self, dev: str = "cpu", seed: int = 0) -> None:
        placement = place(dev, "torch", torch.cuda.device_count())
        self.device = torch.device("cpu" if placement.index is None else
                                   f"cuda:{placement.index}")
        self.on_cpu = placement.host_shortcuts
        if self.device.type == "cpu":
            keep_freed_host_memory()  # fresh 1 MiB tensors page-faulted (host_memory)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)

    @classmethod
    def from_config(cls, cfg: Any) -> TorchBackend:
        return cls(dev=cfg.dev, seed=cfg.seed)

    # ---------------------------------------------------------------- plumbing
    def dtype(self, dt: DataType) -> torch.dtype:
        return _DTYPES[dt.name]

    def from_numpy(self, a: Any, dt: DataType) -> torch.Tensor:
        return host_to_torch(np.array(a), self.device).to(self.dtype(dt))

    def to_device(self, x: Any) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            if _is_host(x):  # one copy, straight to the device
                return host_to_torch(x, self.device)
            x = torch.from_dlpack(x)
        return x.to(self.device)

    def alloc_block(self, n: int, shape: tuple[int, ...], dt: DataType,
                    at_front: bool = True) -> torch.Tensor:
        """An uninitialised buffer a block store fills slot by slot: (n, *shape), or exactly
        `shape` (which already holds n) when `at_front` is False."""
        full = (n, *shape) if at_front else shape
        return torch.empty(full, dtype=self.dtype(dt), device=self.device)

    def stack(self, xs: Sequence[Any]) -> torch.Tensor:
        return torch.stack(list(xs))

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    @staticmethod
    def move_to_front(x: torch.Tensor, axis: int) -> torch.Tensor:
        """`x` with dim `axis` first; a size-1 dim gets the stride a contiguous layout
        gives it (the next dim's extent): movedim keeps its old one, and torch.matmul of
        such a view permuted back to row-major order, e.g. a (B, T, 1, P) learner read of a
        (B, 1, T, P) rollout store, takes a path 2.8x slower than with the usual stride
        (1088 vs 390 us at (64, 64, 1, 64) @ (64, 64), one thread) though both are
        `is_contiguous()`. A size-1 dim's stride never moves an element: same values."""
        y = x.movedim(axis, 0)
        shape = y.shape
        if 1 not in shape[1:]:
            return y
        strides = list(y.stride())
        for d in range(len(shape) - 1, 0, -1):
            if shape[d] == 1:
                strides[d] = strides[d + 1] * shape[d + 1] if d + 1 < len(shape) else 1
        return y.as_strided(shape, strides)

    @staticmethod
    def to_torch(x: Any) -> torch.Tensor:
        return x if isinstance(x, torch.Tensor) else TorchBackend.from_dlpack(x)

    @staticmethod
    def to_numpy(x: Any) -> np.ndarray:
        return torch_to_host(x) if isinstance(x, torch.Tensor) else np.asarray(x)

    @staticmethod
    def from_dlpack(x: Any) -> torch.Tensor:
        if isinstance(x, np.ndarray) and (not x.flags.writeable or min(x.strides, default=0) < 0):
            x = np.array(x)  # torch cannot take negative strides; warns on read-only
        if isinstance(x, np.ndarray) and x.dtype == BF16:
            return host_to_torch(x)  # DLPack has no bfloat16 of numpy's
        return torch.from_dlpack(x)

    @staticmethod
    def shape_of(x: Any) -> tuple[int, ...]:
        return tuple(x.shape)

    @staticmethod
    def dtype_name(x: Any) -> str:
        return _NAME_OF[x.dtype]

    @staticmethod
    def nbytes(x: Any) -> int:
        return int(x.numel() * x.element_size())

    def kernel(self, op: ops.Op) -> Kernel:
        """The op's kernel, registered with its other rules (`tempo.prims`)."""
        return make_kernel(op, self)

    def running(self) -> AbstractContextManager[Any]:
        """Generated code needs no torch autograd (`backends.torch_autograd`)."""
        return below_autograd()


def _is_host(x: Any) -> bool:
    return isinstance(x, np.ndarray | np.generic | list | tuple | int | float | bool)


DLBackend.register("torch", TorchBackend)
