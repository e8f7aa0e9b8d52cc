"""Helpers shared by the backends: dtype promotion on numpy dtypes (Tempo's lattice, not
numpy's), dynamic shapes and pad index maps. (Backend exceptions become a `BackendError`
naming the op in the executor, from the generated line: kernels carry no wrapper.)

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

Kernel = Callable[..., Any]

ALL_DTYPES: tuple[DataType, ...] = tuple(dtypes.fields().values())
NP_OF: dict[str, np.dtype] = {dt.name: np.dtype(dtypes.to_np(dt)) for dt in ALL_DTYPES}
NAME_OF_NP: dict[np.dtype, str] = {v: k for k, v in NP_OF.items()}


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
