"""Compile-time bounds: every dimension of the universe needs a positive integer bound."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tempo.core import naming, ops
from tempo.core.errors import BoundError, ShapeError
from tempo.core.index_expr import Symbol
from tempo.core.sdg import SDG


def resolve_bounds(sdg: SDG, bounds: Mapping[Symbol, int] | None, site: str) -> dict[Symbol, int]:
    """The bound of every universe variable, from `compile(bounds=...)` over the program's
    own definitions; a missing or non-positive one is a BoundError at the user's line."""
    given = dict(sdg.bound_defs)
    for k, v in (bounds or {}).items():
        if not isinstance(k, Symbol) or not k.is_bound:
            raise BoundError(f"compile bounds must be keyed by bound symbols, got {k!r}", site=site)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise BoundError(f"bound {k} must be a positive int, got {v!r}", site=site)
        given[k] = v
    out: dict[Symbol, int] = {}
    for var in sdg.universe.variables:
        b = var.as_bound()
        if b not in given:
            raise BoundError(f"no value for bound {b} (of variable {var}) at compile", site=site)
        out[b] = int(given[b])
    return out


def check_spatial_slices(sdg: SDG, bounds: Mapping[Symbol, int]) -> None:
    """A spatial slice whose ends depend on bounds only (`x[0:T]` on a dim of size 4) must
    fit its dim once the bounds are known: a ShapeError at the user's line, not a backend
    failure at run time (torch) or a silently shorter slice (numpy, jax)."""
    values: dict[Symbol, int] = dict(bounds)
    for op in sdg.ops.values():
        if not isinstance(op, ops.SliceOp) or isinstance(op.start, int) and isinstance(
                op.length, int):
            continue  # static ends are checked where the slice is recorded
        reads = [e for e in sdg.in_edges.get(op.op_id, []) if e.sink_in == 0]
        if len(reads) != 1:
            continue
        k = op.dim - reads[0].expr.num_slices()
        size = sdg.tensors[reads[0].src].shape.at(k) if k >= 0 else None
        start, length = _value(op.start, values), _value(op.length, values)
        if not isinstance(size, int) or start is None or length is None:
            continue
        if start < 0 or length < 0 or start + length > size:
            syms = {b for e in (op.start, op.length) if not isinstance(e, int)
                    for b in e.bound_symbols_used()}
            used = ", ".join(f"{b} = {v}" for b, v in values.items() if b in syms)
            raise ShapeError(
                f"{naming.op_label(op, sdg.names)} takes {start}:{start + length} of dim "
                f"{op.dim} of size {size} (with {used}): the slice must lie within the dim",
                site=op.site)


def _value(e: Any, values: Mapping[Symbol, int]) -> int | None:
    """`e` with the bounds' values, None when it needs a dimension's variable."""
    if isinstance(e, int):
        return e
    try:
        v = e.evaluate(values)
    except (KeyError, TypeError):
        return None
    return v if isinstance(v, int) else None
