"""The NumPy backend: the reference CPU backend, with the torch backend's kernel keys and
semantics (Tempo's dtype lattice, torch.sort/max index rules, torch.gather/scatter_add).

Inputs arrive in the dtypes the op computes in (the front end casts them once when it
records the op, `Op.input_dtypes`), so no kernel promotes: numpy's own promotion (int32 +
float32 is float64) never applies. Kernels always return arrays, never numpy scalars
(scalars do not export DLPack), and never negative-stride views (torch.from_dlpack aborts
on those).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from tempo.core import naming, ops
from tempo.core.dtype import DataType
from tempo.core.errors import BackendError
from tempo.runtime.backend_registry import DLBackend
from tempo.runtime.backends import common as c
from tempo.runtime.backends.numpy_conv import conv_kernel
from tempo.runtime.backends.protocol import Kernel

Factory = Callable[[Any, "NumpyBackend"], Kernel]


def _out_ellipsis_supported() -> bool:
    try:
        return isinstance(np.add(np.zeros(()), 0, out=...), np.ndarray)
    except TypeError:
        return False


_HAS_OUT_ELLIPSIS = _out_ellipsis_supported()


def ufunc(f: Any) -> Kernel:
    """`f` returning 0-d arrays rather than numpy scalars (`out=...`, numpy >= 2.3)."""
    if _HAS_OUT_ELLIPSIS:
        return lambda *xs: f(*xs, out=...)
    return lambda *xs: np.asarray(f(*xs))


def _erf() -> Any:
    try:
        from scipy.special import erf  # optional: not a dependency
    except ImportError:
        import math

        return np.vectorize(math.erf, otypes=[np.float64])
    return erf


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-log(1 + exp(-x))): no overflow warning and full range, dtype preserved
    return np.exp(-np.logaddexp(0, -x))


_FLOAT_UNARY: dict[str, Any] = {
    "exp": np.exp, "ln": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "tanh": np.tanh, "sigmoid": _sigmoid, "erf": _erf(),
}
_SAME_UNARY: dict[str, Any] = {
    "abs": np.abs, "relu": lambda x: np.maximum(x, 0), "sign": np.sign,
    "floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc,
}
_BOOL_UNARY: dict[str, Any] = {"not": np.logical_not, "isnan": np.isnan, "isinf": np.isinf}

_ARITH: dict[str, Any] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "fmod": np.fmod,
}
_CMP: dict[str, Any] = {
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "eq": np.equal, "ne": np.not_equal, "and": np.logical_and, "or": np.logical_or,
    "xor": np.logical_xor,
}


class NumpyBackend:
    """Kernels and array plumbing for NumPy (CPU only; a `Backend`)."""

    name: ClassVar[str] = "numpy"
    block_stores: ClassVar[bool] = True

    def __init__(self, dev: str = "cpu", seed: int = 0) -> None:
        if dev.startswith(("gpu", "cuda")):
            import warnings

            warnings.warn(f"the numpy backend runs on the CPU only; ignoring dev={dev!r}",
                          stacklevel=2)
        self.device = "cpu"
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

    @staticmethod
    def move_to_front(x: np.ndarray, axis: int) -> np.ndarray:
        return np.moveaxis(x, axis, 0)

    @staticmethod
    def to_torch(x: Any) -> Any:
        import torch

        x = np.asarray(x)
        if not x.flags.writeable or any(s < 0 for s in x.strides):
            x = np.array(x)  # torch cannot take negative strides; warns on read-only
        return torch.from_dlpack(x)

    @staticmethod
    def to_numpy(x: Any) -> np.ndarray:
        if hasattr(x, "detach"):  # torch: drop autograd, move to host first
            return np.asarray(x.detach().cpu())
        return np.asarray(x)

    @staticmethod
    def from_dlpack(x: Any) -> np.ndarray:
        if hasattr(x, "detach"):  # torch: drop autograd, move to host first
            x = x.detach().cpu()
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
        factory = KERNELS.get(op.name)
        if factory is None:
            raise BackendError(f"the numpy backend has no kernel for "
                               f"{naming.op_label(op)}", site=op.site)
        # no per-call wrapper: the executor names a failing op by its generated line
        return factory(op, self)


# ---------------------------------------------------------------- sources
def _const(op: ops.ConstOp, be: NumpyBackend) -> Kernel:
    value = be.from_numpy(op.value, op.dtype)
    return lambda: value


def _fill(op: ops.FillOp, be: NumpyBackend) -> Kernel:
    dt, v = be.dtype(op.dtype), op.value
    if c.is_static(op.shape):
        value = np.full(tuple(op.shape), v, dtype=dt)
        return lambda: value
    resolve = c.dynamic_shape(op.shape)
    return lambda *sym: np.full(resolve(*sym), v, dtype=dt)


def _rand(op: ops.RandOp, be: NumpyBackend) -> Kernel:
    dt, rng = be.dtype(op.dtype), be.rng
    resolve = c.dynamic_shape(op.shape)  # symbolic dims arrive as trailing args, like fill
    if dt in (np.float32, np.float64):
        return lambda *sym: rng.random(resolve(*sym), dtype=dt)
    return lambda *sym: rng.random(resolve(*sym), dtype=np.float32).astype(dt)


def _eval_symbol(op: ops.EvalSymbolOp, be: NumpyBackend) -> Kernel:
    dt = be.dtype(op.dtype)
    return lambda v: np.array(v, dtype=dt)


def user_array(r: Any, dt: np.dtype | None = None) -> np.ndarray:
    """A UDF result as an array we can store: torch tensors via DLPack, and no negative
    strides (a user's `x[::-1]` would make torch.from_dlpack abort the process)."""
    if hasattr(r, "detach"):
        r = np.from_dlpack(r.detach().cpu())
    r = np.asarray(r, dtype=dt)
    return np.array(r) if any(s < 0 for s in r.strides) else r


def _udf_source(op: ops.UDFSourceOp | ops.MapUDFOp, be: NumpyBackend) -> Kernel:
    """A user function's result as an array of the declared dtype (sources and maps)."""
    dt, fn = be.dtype(op.dtype), op.fn
    return lambda *args: user_array(fn(*args), dt)


def _ident(op: ops.Op, be: NumpyBackend) -> Kernel:
    return lambda x: x


# ---------------------------------------------------------------- movement
def _reshape(op: ops.ReshapeOp, be: NumpyBackend) -> Kernel:
    if c.is_static(op.shape):
        shape = tuple(op.shape)
        return lambda x: np.reshape(x, shape)
    resolve = c.dynamic_shape(op.shape)
    return lambda x, *sym: np.reshape(x, resolve(*sym))


def _expand(op: ops.ExpandOp, be: NumpyBackend) -> Kernel:
    if c.is_static(op.shape):
        shape = tuple(op.shape)
        return lambda x: np.broadcast_to(x, shape)
    resolve = c.dynamic_shape(op.shape)
    return lambda x, *sym: np.broadcast_to(x, resolve(*sym))


def _slice(op: ops.SliceOp, be: NumpyBackend) -> Kernel:
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


def _pad(op: ops.PadOp, be: NumpyBackend) -> Kernel:
    padding = [tuple(p) for p in op.padding]
    if op.mode == "constant":
        value = op.value

        def pad_const(x: np.ndarray) -> np.ndarray:
            width = padding + [(0, 0)] * (x.ndim - len(padding))
            return np.pad(x, width, mode="constant", constant_values=value)

        return pad_const
    mode = op.mode

    def pad_index(x: np.ndarray) -> np.ndarray:
        for d, (before, after) in enumerate(padding):
            if before or after:
                x = np.take(x, c.pad_index(x.shape[d], before, after, mode), axis=d)
        return x

    return pad_index


def _cat(op: ops.CatOp, be: NumpyBackend) -> Kernel:
    dim = op.dim

    def cat(*xs: np.ndarray) -> np.ndarray:
        return np.concatenate(xs, axis=dim)

    return cat


def _flip(op: ops.FlipOp, be: NumpyBackend) -> Kernel:
    dims = op.dims
    return lambda x: np.flip(x, dims).copy()  # a copy: no negative strides (DLPack)


def _index_select(op: ops.IndexSelectOp, be: NumpyBackend) -> Kernel:
    dim = op.dim
    return lambda x, i: np.take(x, i, axis=dim)  # a 0-d index removes the dim, as in torch


def _fit_to_index(x: np.ndarray, i: np.ndarray, dim: int) -> np.ndarray:
    """torch.gather/scatter allow an index smaller than the input off `dim`: crop to it."""
    nd = x.ndim
    d = dim % nd if nd else 0
    if all(a == b for k, (a, b) in enumerate(zip(x.shape, i.shape)) if k != d):
        return x
    return x[tuple(slice(None) if k == d else slice(0, s) for k, s in enumerate(i.shape))]


def _gather(op: ops.GatherOp, be: NumpyBackend) -> Kernel:
    dim = op.dim
    return lambda x, i: np.take_along_axis(_fit_to_index(x, i, dim), i, axis=dim)


def scatter_coords(i: np.ndarray, dim: int) -> tuple[np.ndarray, ...]:
    """Full coordinates for torch.scatter_add: every index position, `dim` replaced by i."""
    grid: list[np.ndarray] = list(np.indices(i.shape, sparse=True))
    grid[dim % i.ndim] = i
    return tuple(grid)


def _scatter_add(op: ops.ScatterAddOp, be: NumpyBackend) -> Kernel:
    dim = op.dim

    def scatter_add(x: np.ndarray, i: np.ndarray, s: np.ndarray) -> np.ndarray:
        out = np.array(x)
        if i.ndim == 0:
            return out
        np.add.at(out, scatter_coords(i, dim), s[tuple(slice(0, n) for n in i.shape)])
        return out

    return scatter_add


def _index_add(op: ops.IndexAddOp, be: NumpyBackend) -> Kernel:
    dim, alpha = op.dim, op.alpha

    def index_add(x: np.ndarray, i: np.ndarray, s: np.ndarray) -> np.ndarray:
        out = np.array(x)
        d = dim % max(x.ndim, 1)
        if alpha != 1:
            s = (s * alpha).astype(x.dtype)
        key: Any = (slice(None),) * d + (i,)  # a 0-d index adds one slice
        np.add.at(out, key, s)
        return out

    return index_add


# ---------------------------------------------------------------- elementwise
def _unary(op: ops.UnaryOp, be: NumpyBackend) -> Kernel:
    fn = op.fn
    if fn in _FLOAT_UNARY:
        f = _FLOAT_UNARY[fn]

        def float_unary(x: np.ndarray) -> np.ndarray:
            r = f(x)
            return r if r.dtype == x.dtype else np.asarray(r, dtype=x.dtype)  # erf: f16 -> f32

        return float_unary
    if fn == "neg":
        return ufunc(np.negative)
    if fn in ("floor", "ceil", "round", "trunc"):
        f = ufunc(_SAME_UNARY[fn])
        return lambda x: x if x.dtype.kind in "biu" else f(x)  # ints: numpy would go float
    if fn == "relu":
        maximum = ufunc(np.maximum)
        return lambda x: maximum(x, x.dtype.type(0))
    table = _SAME_UNARY if fn in _SAME_UNARY else _BOOL_UNARY
    return ufunc(table[fn])


def _binary(op: ops.BinaryOp, be: NumpyBackend) -> Kernel:
    if op.fn == "div":
        return ufunc(np.true_divide)  # float operands (BinaryOp.input_dtypes)
    return ufunc(_ARITH.get(op.fn) or _CMP[op.fn])


def _where(op: ops.WhereOp, be: NumpyBackend) -> Kernel:
    return lambda cond, a, b: np.asarray(np.where(cond, a, b))


def _cast(op: ops.CastOp, be: NumpyBackend) -> Kernel:
    dt = be.dtype(op.dtype)
    return lambda x: x.astype(dt, copy=False)


# ---------------------------------------------------------------- reductions
_ACC = {np.dtype(np.float16): np.dtype(np.float32)}  # accumulate half in float, like torch


def _sum(op: ops.SumOp, be: NumpyBackend) -> Kernel:
    """x arrives in its accumulation dtype (`SumOp.input_dtypes`); the result keeps it."""
    dims, keep = tuple(op.dims), op.keepdim
    if not dims:
        return lambda x: x

    def sum_(x: np.ndarray) -> np.ndarray:
        dt = x.dtype
        acc = _ACC.get(dt, dt)
        r = np.asarray(np.sum(x, axis=dims, keepdims=keep, dtype=acc))
        return r if acc is dt else r.astype(dt)

    return sum_


def _max(op: ops.MaxOp, be: NumpyBackend) -> Kernel:
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


def _cumsum(op: ops.CumsumOp, be: NumpyBackend) -> Kernel:
    dim = op.dim

    def cumsum(x: np.ndarray) -> np.ndarray:
        dt = x.dtype
        if x.ndim == 0:
            return x
        acc = _ACC.get(dt, dt)
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


def _sort(op: ops.SortOp, be: NumpyBackend) -> Kernel:
    dim, desc = op.dim, op.descending

    def sort(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if x.ndim == 0:
            return x, np.zeros((), dtype=np.int64)
        idx = sort_indices(x, dim, desc)
        return np.take_along_axis(x, idx, axis=dim), idx.astype(np.int64, copy=False)

    return sort


def _matmul(op: ops.MatMulOp, be: NumpyBackend) -> Kernel:
    return ufunc(np.matmul)


KERNELS: dict[str, Factory] = {
    "const": _const,
    "fill": _fill,
    "rand": _rand,
    "eval_symbol": _eval_symbol,
    "udf_source": _udf_source,
    "merge": _ident,
    "ident": _ident,
    "reshape": _reshape,
    "permute": lambda op, be: (lambda dims: lambda x: np.transpose(x, dims))(tuple(op.dims)),
    "expand": _expand,
    "slice": _slice,
    "pad": _pad,
    "cat": _cat,
    "flip": _flip,
    "index_select": _index_select,
    "gather": _gather,
    "scatter_add": _scatter_add,
    "index_add": _index_add,
    "unary": _unary,
    "binary": _binary,
    "where": _where,
    "cast": _cast,
    "sum": _sum,
    "max": _max,
    "cumsum": _cumsum,
    "sort": _sort,
    "matmul": _matmul,
    "conv": lambda op, be: conv_kernel(op),
    "sink_udf": lambda op, be: op.fn,
    "map_udf": _udf_source,
    "barrier": lambda op, be: lambda *xs: None,
}


DLBackend.register("numpy", NumpyBackend)
