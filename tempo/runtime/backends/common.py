"""Helpers shared by the backends: dtype promotion on numpy dtypes (Tempo's lattice, not
numpy's), dynamic shapes, pad index maps, and the guard that turns a backend exception
into a `BackendError` naming the op.

Kernels are called once per op per point, so everything here is resolved at factory time
and the per-call paths are a dict lookup or a comparison at most.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tempo.core import ops
from tempo.core.dtype import DataType, dtypes
from tempo.core.errors import BackendError, TempoError

Kernel = Callable[..., Any]

ALL_DTYPES: tuple[DataType, ...] = tuple(dtypes.fields().values())
NP_OF: dict[str, np.dtype] = {dt.name: np.dtype(dtypes.to_np(dt)) for dt in ALL_DTYPES}
NAME_OF_NP: dict[np.dtype, str] = {v: k for k, v in NP_OF.items()}

# Ops whose kernels call user code: user exceptions must reach the user unchanged.
USER_CODE_OPS = frozenset({"udf_source", "sink_udf", "map_udf"})
# Ops whose kernels cannot fail for a dtype: they stay unwrapped (no extra call frame).
NEVER_FAIL_OPS = frozenset({"merge", "ident", "barrier", "const", "fill"})


def _build_promotion() -> dict[tuple[np.dtype, np.dtype], np.dtype]:
    table = {}
    for a, b in itertools.product(ALL_DTYPES, repeat=2):
        table[(NP_OF[a.name], NP_OF[b.name])] = NP_OF[dtypes.upcast(a, b).name]
    return table


PROMOTE: dict[tuple[np.dtype, np.dtype], np.dtype] = _build_promotion()


def promote_all(dts: Sequence[np.dtype]) -> np.dtype:
    """Tempo's upcast of several numpy dtypes."""
    out = dts[0]
    for d in dts[1:]:
        out = PROMOTE[(out, d)]
    return out


def float_table() -> dict[np.dtype, np.dtype]:
    """`least_upper_float` per numpy dtype; built per kernel because `default_float` may
    change between compilations."""
    return {NP_OF[dt.name]: NP_OF[dtypes.least_upper_float(dt).name] for dt in ALL_DTYPES}


def accumulate_table() -> dict[np.dtype, np.dtype]:
    """Result dtype of sum/cumsum per input dtype (`ops.accumulate_dtype`: bools and narrow
    ints widen to `default_int`), built per kernel as `default_int` follows the config."""
    return {NP_OF[dt.name]: NP_OF[ops.accumulate_dtype(dt).name] for dt in ALL_DTYPES}


def signed_table() -> dict[np.dtype, np.dtype]:
    """`least_upper_signed_int` for the unsigned dtypes (neg of uint promotes)."""
    return {
        NP_OF[dt.name]: NP_OF[dtypes.least_upper_signed_int(dt).name]
        for dt in ALL_DTYPES if dtypes.is_unsigned_int(dt)
    }


def dynamic_shape(shape: Any) -> Callable[..., tuple[int, ...]]:
    """Resolver of a shape whose symbolic dims arrive as trailing kernel args, in order."""
    dims = list(shape)

    def resolve(*sym: int) -> tuple[int, ...]:
        it = iter(sym)
        return tuple(d if isinstance(d, int) else next(it) for d in dims)

    return resolve


def is_static(shape: Any) -> bool:
    return all(isinstance(d, int) for d in shape)


@functools.lru_cache(maxsize=4096)
def pad_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """Source positions of a padded dim for the index-based modes (reflect, replicate),
    identical to the torch kernel's (reflect folds pads longer than n - 1)."""
    out = []
    for i in range(-before, n + after):
        if mode == "replicate":
            out.append(min(max(i, 0), n - 1))
        else:
            period = 2 * (n - 1) if n > 1 else 1
            j = abs(i) % period if n > 1 else 0
            out.append(period - j if j >= n else j)
    return np.asarray(out, dtype=np.int64)


def describe_args(args: Sequence[Any]) -> str:
    parts = []
    for a in args:
        dt, shape = getattr(a, "dtype", None), getattr(a, "shape", None)
        if dt is not None and shape is not None:
            name = NAME_OF_NP.get(np.dtype(dt), str(dt)) if _is_np_dtype(dt) else str(dt)
            parts.append(f"{name}{tuple(shape)}")
        else:
            parts.append(type(a).__name__)
    return ", ".join(parts)


def _is_np_dtype(dt: Any) -> bool:
    try:
        np.dtype(dt)
    except TypeError:
        return False
    return True


def backend_error(
    op: ops.Op, backend: str, args: Sequence[Any], exc: BaseException
) -> BackendError:
    """The user-facing error for a kernel failure: op, backend, argument dtypes/shapes."""
    err = BackendError(
        f"the {backend} backend cannot run {op!r} on ({describe_args(args)}): "
        f"{type(exc).__name__}: {exc}",
        site=op.site or None,
    )
    err.backend_exception = exc  # type: ignore[attr-defined]
    return err


def guard(op: ops.Op, fn: Kernel, backend: str) -> Kernel:
    """Wrap `fn` so a backend exception surfaces as a `BackendError` naming the op (the
    backend's own stack trace is kept on `err.backend_exception`, not printed)."""
    if op.name in USER_CODE_OPS or op.name in NEVER_FAIL_OPS:
        return fn

    def guarded(*args: Any) -> Any:
        try:
            return fn(*args)
        except TempoError:
            raise
        except Exception as e:  # noqa: BLE001 - any backend failure becomes a BackendError
            raise backend_error(op, backend, args, e) from None

    guarded.__wrapped__ = fn  # type: ignore[attr-defined]
    return guarded
