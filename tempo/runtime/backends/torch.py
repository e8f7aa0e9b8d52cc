"""The PyTorch backend: device/dtype mapping and one kernel table keyed by op name.

A kernel factory takes the op (and the backend) once at compile time and returns the
callable the generated code invokes per point, so op parameters are bound ahead of time.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812

from tempo.core import naming, ops
from tempo.core.dtype import DataType
from tempo.core.errors import BackendError
from tempo.runtime.backend_registry import DLBackend
from tempo.runtime.backends import common as c
from tempo.runtime.backends.protocol import Kernel

Factory = Callable[[Any, "TorchBackend"], Kernel]

_DTYPES: dict[str, torch.dtype] = {
    "bool": torch.bool, "char": torch.int8, "unsigned char": torch.uint8, "short": torch.int16,
    "unsigned short": torch.uint16, "int": torch.int32, "unsigned int": torch.uint32,
    "long": torch.int64, "unsigned long": torch.uint64, "half": torch.float16,
    "float": torch.float32,
    "double": torch.float64,
}

_UNARY: dict[str, Kernel] = {
    "neg": torch.neg, "exp": torch.exp, "ln": torch.log, "sqrt": torch.sqrt, "sin": torch.sin,
    "cos": torch.cos, "tan": torch.tan, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
    "erf": torch.erf, "abs": torch.abs, "relu": torch.relu, "floor": torch.floor,
    "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc, "sign": torch.sign,
    "not": torch.logical_not, "isnan": torch.isnan, "isinf": torch.isinf,
}

_BINARY: dict[str, Kernel] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.true_divide,
    "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum, "fmod": torch.fmod,
    "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge, "eq": torch.eq,
    "ne": torch.ne, "and": torch.logical_and, "or": torch.logical_or, "xor": torch.logical_xor,
}


_NAME_OF: dict[torch.dtype, str] = {v: k for k, v in _DTYPES.items()}


class TorchBackend:
    """Kernels and tensor plumbing for PyTorch on CPU or CUDA (a `Backend`)."""

    name: ClassVar[str] = "torch"
    block_stores: ClassVar[bool] = True

    def __init__(self, dev: str = "cpu", seed: int = 0) -> None:
        want_gpu = dev.startswith(("gpu", "cuda"))
        if want_gpu and not torch.cuda.is_available():
            warnings.warn("dev='gpu' requested but no GPU is present: running on the CPU",
                          stacklevel=2)
            want_gpu = False
        self.device = torch.device("cuda:0" if want_gpu else "cpu")
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)

    @classmethod
    def from_config(cls, cfg: Any) -> TorchBackend:
        return cls(dev=cfg.dev, seed=cfg.seed)

    # ---------------------------------------------------------------- plumbing
    def dtype(self, dt: DataType) -> torch.dtype:
        return _DTYPES[dt.name]

    def from_numpy(self, a: Any, dt: DataType) -> torch.Tensor:
        return torch.as_tensor(np.array(a), device=self.device).to(self.dtype(dt))

    def to_device(self, x: Any) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            x = torch.as_tensor(np.asarray(x)) if _is_host(x) else torch.from_dlpack(x)
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
        return x.movedim(axis, 0)

    @staticmethod
    def to_torch(x: Any) -> torch.Tensor:
        return x if isinstance(x, torch.Tensor) else TorchBackend.from_dlpack(x)

    @staticmethod
    def to_numpy(x: Any) -> np.ndarray:
        return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)

    @staticmethod
    def from_dlpack(x: Any) -> torch.Tensor:
        if isinstance(x, np.ndarray) and (not x.flags.writeable or min(x.strides, default=0) < 0):
            x = np.array(x)  # torch cannot take negative strides; warns on read-only
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
        factory = KERNELS.get(op.name)
        if factory is None:
            raise BackendError(f"the torch backend has no kernel for "
                               f"{naming.op_label(op)}", site=op.site)
        # Failures are named by the executor (generated line -> op): no per-call wrapper.
        return factory(op, self)


def _is_host(x: Any) -> bool:
    return isinstance(x, np.ndarray | np.generic | list | tuple | int | float | bool)


def _const(op: ops.ConstOp, be: TorchBackend) -> Kernel:
    value = be.from_numpy(op.value, op.dtype)
    return lambda: value


def _fill(op: ops.FillOp, be: TorchBackend) -> Kernel:
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


def _rand(op: ops.RandOp, be: TorchBackend) -> Kernel:
    shape, dt, dev, gen = tuple(op.shape), be.dtype(op.dtype), be.device, be.generator
    if c.is_static(op.shape):
        return lambda: torch.rand(shape, dtype=dt, device=dev, generator=gen)
    resolve = c.dynamic_shape(op.shape)  # symbolic dims arrive as trailing args, like fill
    return lambda *sym: torch.rand(resolve(*sym), dtype=dt, device=dev, generator=gen)


def _eval_symbol(op: ops.EvalSymbolOp, be: TorchBackend) -> Kernel:
    dt, dev = be.dtype(op.dtype), be.device
    cache: dict[int, torch.Tensor] = {}  # torch.tensor() costs ~10 us; symbol values repeat

    def eval_symbol(v: int) -> torch.Tensor:
        x = cache.get(v)
        if x is None:
            x = cache[v] = torch.tensor(v, dtype=dt, device=dev)
        return x

    return eval_symbol


def _udf_source(op: ops.UDFSourceOp | ops.MapUDFOp, be: TorchBackend) -> Kernel:
    """A user function's result (torch, numpy or a Python value) as a tensor of the
    declared dtype on the device (sources and maps alike, as on jax and numpy)."""
    dt, dev, fn = be.dtype(op.dtype), be.device, op.fn

    def source(*args: Any) -> torch.Tensor:
        return torch.as_tensor(fn(*args), device=dev).to(dt)

    return source


def _ident(op: ops.Op, be: TorchBackend) -> Kernel:
    return lambda x: x


def _reshape(op: ops.ReshapeOp, be: TorchBackend) -> Kernel:
    if c.is_static(op.shape):
        shape = tuple(op.shape)
        return lambda x: x.reshape(shape)
    resolve = c.dynamic_shape(op.shape)
    return lambda x, *sym: x.reshape(resolve(*sym))


def _expand(op: ops.ExpandOp, be: TorchBackend) -> Kernel:
    if c.is_static(op.shape):
        shape = tuple(op.shape)
        return lambda x: x.expand(shape)
    resolve = c.dynamic_shape(op.shape)
    return lambda x, *sym: x.expand(resolve(*sym))


def _slice(op: ops.SliceOp, be: TorchBackend) -> Kernel:
    dim, start, length = op.dim, op.start, op.length
    if isinstance(start, int) and isinstance(length, int):
        return lambda x: torch.narrow(x, dim, start, length)
    if isinstance(start, int):
        return lambda x, n: torch.narrow(x, dim, start, n)
    if isinstance(length, int):
        return lambda x, s: torch.narrow(x, dim, s, length)
    return lambda x, s, n: torch.narrow(x, dim, s, n)


def _pad(op: ops.PadOp, be: TorchBackend) -> Kernel:
    if op.mode == "constant":
        def pad_const(x: torch.Tensor) -> torch.Tensor:
            flat: list[int] = []
            for d in reversed(range(x.ndim)):
                flat += list(op.padding[d]) if d < len(op.padding) else [0, 0]
            return F.pad(x, flat, mode="constant", value=op.value)

        return pad_const

    def pad_index(x: torch.Tensor) -> torch.Tensor:
        for d, (before, after) in enumerate(op.padding):
            if before or after:
                idx = c.pad_index(x.shape[d], before, after, op.mode)
                x = torch.index_select(x, d, torch.from_numpy(idx).to(x.device))
        return x

    return pad_index


KERNELS: dict[str, Factory] = {
    "const": _const,
    "fill": _fill,
    "rand": _rand,
    "eval_symbol": _eval_symbol,
    "udf_source": _udf_source,
    "merge": _ident,
    "ident": _ident,
    "reshape": _reshape,
    "permute": lambda op, be: lambda x: torch.permute(x, op.dims),
    "expand": _expand,
    "slice": _slice,
    "pad": _pad,
    "cat": lambda op, be: lambda *xs: torch.cat(xs, dim=op.dim),
    "flip": lambda op, be: lambda x: torch.flip(x, op.dims),
    "index_select": lambda op, be: (
        lambda x, i: torch.index_select(x, op.dim, i.reshape(-1)).squeeze(op.dim)
        if i.ndim == 0 else torch.index_select(x, op.dim, i)
    ),
    "gather": lambda op, be: lambda x, i: torch.gather(x, op.dim, i.long()),
    "scatter_add": lambda op, be: lambda x, i, s: torch.scatter_add(x, op.dim, i.long(), s),
    "index_add": lambda op, be: _index_add(op),
    "unary": lambda op, be: _UNARY[op.fn],
    "binary": lambda op, be: _BINARY[op.fn],
    "where": lambda op, be: torch.where,
    "cast": lambda op, be: (lambda dt: lambda x: x.to(dt))(be.dtype(op.dtype)),
    # x arrives in its accumulation dtype (SumOp.input_dtypes): keep it (torch widens ints)
    "sum": lambda op, be: (
        (lambda x: torch.sum(x, dim=op.dims, keepdim=op.keepdim, dtype=x.dtype)) if op.dims
        else (lambda x: x)
    ),
    "max": lambda op, be: lambda x: tuple(torch.max(x, dim=op.dim, keepdim=op.keepdim)),
    "cumsum": lambda op, be: lambda x: torch.cumsum(x, dim=op.dim, dtype=x.dtype),
    "sort": lambda op, be: lambda x: tuple(
        torch.sort(x, dim=op.dim, descending=op.descending, stable=op.stable)
    ),
    "matmul": lambda op, be: torch.matmul,
    "conv": lambda op, be: _conv(op),
    "sink_udf": lambda op, be: op.fn,
    "map_udf": _udf_source,
    "barrier": lambda op, be: lambda *xs: None,
}


def _index_add(op: ops.IndexAddOp) -> Kernel:
    def index_add(x: torch.Tensor, i: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        if i.ndim == 0:  # a scalar index adds one slice: give it back its dim
            i, s = i.reshape(1), s.unsqueeze(op.dim)
        return torch.index_add(x, op.dim, i.long(), s, alpha=op.alpha)

    return index_add


def _conv(op: ops.ConvOp) -> Kernel:
    n = op.n_dims
    if op.transposed:
        tfn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[n]
        out_pad = op.output_padding or (0,) * n
        return lambda x, w: tfn(x, w, stride=op.stride, padding=op.padding,
                                output_padding=out_pad, groups=op.groups, dilation=op.dilation)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    return lambda x, w: fn(x, w, stride=op.stride, padding=op.padding,
                           dilation=op.dilation, groups=op.groups)


DLBackend.register("torch", TorchBackend)
