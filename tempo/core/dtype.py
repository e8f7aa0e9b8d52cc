"""Element types of tensors and their JAX-style promotion lattice.
Core stays backend-free: torch/jax dtypes are recognised by their string form only.
bfloat16 is numpy's through `ml_dtypes` (a numpy dtype extension jax already depends on,
no backend): numpy itself has no bfloat16 and no finfo for it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, TypeAlias

import ml_dtypes
import numpy as np

from tempo.core.errors import DTypeError, user_site


@dataclass(frozen=True)
class DataType:
    """One element type: a printable name, its size, and its rank in the promotion order.
    Floats also carry machine epsilon and the smallest normal value (numpy finfo)."""

    name: str
    repr_bytes: int
    priority: int
    eps: float | None = None
    minimum: float | None = None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"dtypes.{_ATTR_OF.get(self.name, self.name)}"


def _float(name: str, nbytes: int, prio: int, np_dt: Any) -> DataType:
    fi = ml_dtypes.finfo(np_dt)  # numpy's finfo for numpy floats, and bfloat16's
    return DataType(name, nbytes, prio, eps=float(fi.eps), minimum=float(fi.tiny))


DataTypeLike: TypeAlias = DataType | str | np.dtype | type | None
"""Anything `dtypes.from_` accepts (torch/jax dtype objects too, by duck typing)."""


class dtypes:  # noqa: N801 - public name fixed by the API
    """Namespace of every dtype plus promotion and conversion helpers (API §5).
    `default_float`/`default_int` are mutable: programs and configs switch them."""

    bool_: ClassVar[DataType] = DataType("bool", 1, 0)
    int8: ClassVar[DataType] = DataType("char", 1, 1)
    uint8: ClassVar[DataType] = DataType("unsigned char", 1, 2)
    int16: ClassVar[DataType] = DataType("short", 2, 3)
    uint16: ClassVar[DataType] = DataType("unsigned short", 2, 4)
    int32: ClassVar[DataType] = DataType("int", 4, 5)
    uint32: ClassVar[DataType] = DataType("unsigned int", 4, 6)
    int64: ClassVar[DataType] = DataType("long", 8, 7)
    uint64: ClassVar[DataType] = DataType("unsigned long", 8, 8)
    float16: ClassVar[DataType] = _float("half", 2, 11, np.float16)
    # float16's sibling (JAX's lattice): both sit under float32, so bf16 + f16 -> float32;
    # ints join float16 first (priority 11 < 12), as before bfloat16 existed.
    bfloat16: ClassVar[DataType] = _float("bfloat16", 2, 12, ml_dtypes.bfloat16)
    float32: ClassVar[DataType] = _float("float", 4, 13, np.float32)
    float64: ClassVar[DataType] = _float("double", 8, 14, np.float64)

    default_float: ClassVar[DataType] = float32
    default_int: ClassVar[DataType] = int32

    # ---- classification -------------------------------------------------------------
    @staticmethod
    def is_bool(dt: DataType) -> bool:
        return dt == dtypes.bool_

    @staticmethod
    def is_signed_int(dt: DataType) -> bool:
        return dt in (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)

    @staticmethod
    def is_unsigned_int(dt: DataType) -> bool:
        return dt in (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)

    @staticmethod
    def is_integer(dt: DataType) -> bool:
        return dtypes.is_signed_int(dt) or dtypes.is_unsigned_int(dt)

    @staticmethod
    def is_float(dt: DataType) -> bool:
        return dt in (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)

    @staticmethod
    def fields() -> dict[str, DataType]:
        """Every dtype member by attribute name (`bool_`, `int8`, ...)."""
        return {attr: getattr(dtypes, attr) for attr in _ALL_ATTRS}

    # ---- promotion ------------------------------------------------------------------
    @staticmethod
    def upcast(*dts: DataType) -> DataType:
        """Least common ancestor in the lattice: the lowest-priority dtype every input
        promotes to (int64+float32 → float32, uint8+int8 → int16)."""
        if not dts:
            raise DTypeError("upcast needs at least one dtype", site=user_site())
        for dt in dts:
            if not isinstance(dt, DataType):
                raise DTypeError(f"upcast got {dt!r}, not a DataType", site=user_site())
        common = set(_ancestors(dts[0]))
        for dt in dts[1:]:
            common &= _ancestors(dt)
        return min(common, key=lambda d: d.priority)

    @staticmethod
    def least_upper_float(dt: DataType) -> DataType:
        """`dt` itself if it is a float, else the float an int/bool is promoted to."""
        if dtypes.is_float(dt):
            return dt
        return dtypes.upcast(dt, dtypes.default_float)

    @staticmethod
    def least_upper_signed_int(dt: DataType) -> DataType:
        """Smallest signed int holding every value of `dt` (uint64 saturates at int64)."""
        if dtypes.is_signed_int(dt):
            return dt
        if dtypes.is_bool(dt):
            return dtypes.int8
        if dtypes.is_unsigned_int(dt):
            signed = {dtypes.uint8: dtypes.int16, dtypes.uint16: dtypes.int32}
            return signed.get(dt, dtypes.int64)
        raise DTypeError(f"no signed int type holds {dt}", site=user_site())

    @staticmethod
    def implied(val: Any) -> DataType:
        """The dtype a Python/numpy/backend value is given when lifted to a tensor:
        bool→bool_, int→smallest signed int that fits, float→float32, list→upcast."""
        if isinstance(val, DataType):
            raise DTypeError(f"implied() wants a value, got the dtype {val}", site=user_site())
        if isinstance(val, np.generic):  # before float: np.float64 subclasses float
            return dtypes.from_np(val.dtype)
        if isinstance(val, bool):
            return dtypes.bool_
        if isinstance(val, int):
            for dt in (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64):
                if dtypes.min(dt) <= val <= dtypes.max(dt):
                    return dt
            raise DTypeError(f"integer {val} does not fit in int64", site=user_site())
        if isinstance(val, float):
            return dtypes.float32
        if isinstance(val, list | tuple):
            if len(val) == 0:
                return dtypes.default_float
            return dtypes.upcast(*(dtypes.implied(v) for v in val))
        arr_dt = getattr(val, "dtype", None)
        if arr_dt is not None:  # numpy/torch/jax arrays and numpy scalars
            return dtypes.from_(arr_dt)
        kind = type(val).__name__
        if hasattr(val, "vars_used") and hasattr(val, "evaluate"):  # index expressions
            return dtypes.bool_ if "Bool" in kind or _is_bool_expr(val) else dtypes.default_int
        raise DTypeError(f"cannot infer a dtype for {val!r} ({kind})", site=user_site())

    # ---- conversion -----------------------------------------------------------------
    @staticmethod
    def to_np(dt: DataType) -> np.dtype:
        return np.dtype(_NP_OF[dt.name])

    @staticmethod
    def from_np(np_dt: Any) -> DataType:
        name = np.dtype(np_dt).name
        attr = _BY_NP_NAME.get(name)
        if attr is None:
            raise DTypeError(f"numpy dtype {name} has no Tempo dtype", site=user_site())
        return getattr(dtypes, attr)

    @staticmethod
    def from_(x: Any, none_dtype: DataType | None = None) -> DataType:
        """Any dtype-like to a DataType: DataType, numpy dtype or scalar type, dtype string
        (ours like "float", attribute like "float32", numpy, "torch.float32"), torch/jax
        dtype objects (by their string form), and Python `bool`/`int`/`float`."""
        if x is None:
            return none_dtype if none_dtype is not None else dtypes.default_float
        if isinstance(x, DataType):
            return x
        if x is bool:
            return dtypes.bool_
        if x is int:
            return dtypes.default_int
        if x is float:
            return dtypes.default_float
        if isinstance(x, np.dtype):
            return dtypes.from_np(x)
        if isinstance(x, str):
            return _from_str(x)
        if isinstance(x, type) and issubclass(x, np.generic):
            return dtypes.from_np(x)
        inner = getattr(x, "dtype", None)  # jax scalar types (jnp.float32) carry a np dtype
        if isinstance(inner, np.dtype):
            return dtypes.from_np(inner)
        return _from_str(str(x))  # torch.float32 prints as "torch.float32"

    # ---- value ranges ---------------------------------------------------------------
    @staticmethod
    def min(dt: DataType) -> int | float | bool:
        if dtypes.is_float(dt):
            return -math.inf
        if dtypes.is_bool(dt):
            return False
        return int(np.iinfo(dtypes.to_np(dt)).min)

    @staticmethod
    def max(dt: DataType) -> int | float | bool:
        if dtypes.is_float(dt):
            return math.inf
        if dtypes.is_bool(dt):
            return True
        return int(np.iinfo(dtypes.to_np(dt)).max)


_ALL_ATTRS = ("bool_", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
              "float16", "bfloat16", "float32", "float64")
_ATTR_OF = {getattr(dtypes, a).name: a for a in _ALL_ATTRS}
_NP_OF = {getattr(dtypes, a).name: ("bool" if a == "bool_" else a) for a in _ALL_ATTRS}
_BY_NP_NAME = {np_name: _ATTR_OF[name] for name, np_name in _NP_OF.items()}

# Direct promotions (API §5); `upcast` walks their transitive closure.
_EDGES: dict[str, tuple[str, ...]] = {
    "bool_": ("int8", "uint8"),
    "int8": ("int16",),
    "int16": ("int32",),
    "int32": ("int64",),
    "int64": ("float16", "bfloat16"),
    "uint8": ("int16", "uint16"),
    "uint16": ("int32", "uint32"),
    "uint32": ("int64", "uint64"),
    "uint64": ("float16", "bfloat16"),
    "float16": ("float32",),
    "bfloat16": ("float32",),
    "float32": ("float64",),
    "float64": (),
}


@cache
def _ancestors(dt: DataType) -> frozenset[DataType]:
    """`dt` and every dtype it promotes to."""
    out = {dt}
    for nxt in _EDGES[_ATTR_OF[dt.name]]:
        out |= _ancestors(getattr(dtypes, nxt))
    return frozenset(out)


def _from_str(s: str) -> DataType:
    key = s.strip()
    for prefix in ("torch.", "jnp.", "jax.numpy.", "np.", "numpy."):
        if key.startswith(prefix):
            key = key[len(prefix):]
            break
    if key in _ATTR_OF:  # our own names: str(dt) round-trips ("float" is float32)
        return getattr(dtypes, _ATTR_OF[key])
    if key in _ALL_ATTRS:
        return getattr(dtypes, key)
    if key == "bool":
        return dtypes.bool_
    try:
        return dtypes.from_np(np.dtype(key))
    except (TypeError, DTypeError):
        raise DTypeError(f"unknown dtype {s!r}", site=user_site()) from None


def is_float_np(np_dt: Any) -> bool:
    """Whether a numpy dtype is a float: kind "f", or ml_dtypes' bfloat16 (kind "V")."""
    dt = np.dtype(np_dt)
    return dt.kind == "f" or dt == _BF16_NP


_BF16_NP = np.dtype(ml_dtypes.bfloat16)


def _is_bool_expr(val: Any) -> bool:
    try:
        from tempo.core import index_expr as ie
    except ImportError:
        return False
    bool_cls = getattr(ie, "BooleanIndexValue", None)
    return bool_cls is not None and isinstance(val, bool_cls)
