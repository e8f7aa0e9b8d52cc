"""Helpers shared by the backends' kernels (`tempo.prims`): numpy dtypes of Tempo's dtypes
and shapes whose symbolic dims arrive as kernel args. There is no promotion here: inputs
arrive in the dtypes the op computes in (`Op.input_dtypes`). Backend exceptions become a
`BackendError` naming the op in the executor, from the generated line: kernels carry no
wrapper.

Kernels are called once per op per point, so everything here is resolved at factory time
and the per-call paths are a dict lookup or a comparison at most.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tempo.core.dtype import DataType, dtypes

ALL_DTYPES: tuple[DataType, ...] = tuple(dtypes.fields().values())
NP_OF: dict[str, np.dtype] = {dt.name: np.dtype(dtypes.to_np(dt)) for dt in ALL_DTYPES}
NAME_OF_NP: dict[np.dtype, str] = {v: k for k, v in NP_OF.items()}


def dynamic_shape(shape: Any) -> Callable[..., tuple[int, ...]]:
    """Resolver of a shape whose symbolic dims arrive as trailing kernel args, in order
    (bound-only dims are already ints: `runtime.static_args`). The common case of one
    symbolic dim is two tuple concatenations; no generator runs per call."""
    dims = tuple(shape)
    pos = [k for k, d in enumerate(dims) if not isinstance(d, int)]
    if not pos:
        return lambda: dims
    if len(pos) == 1:
        head, tail = dims[: pos[0]], dims[pos[0] + 1:]
        return lambda n: head + (n,) + tail
    template = list(dims)

    def resolve(*sym: int) -> tuple[int, ...]:
        out = template.copy()
        for k, v in zip(pos, sym):
            out[k] = v
        return tuple(out)

    return resolve


def is_static(shape: Any) -> bool:
    return all(isinstance(d, int) for d in shape)


def plain_key(v: Any) -> Any:
    """A cache-key part with a plain `==` (index expressions overload `==` symbolically)."""
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, tuple):
        return tuple(plain_key(e) for e in v)
    return (type(v).__name__, str(v))
