"""Compile-time bounds: every dimension of the universe needs a positive integer bound."""

from __future__ import annotations

from collections.abc import Mapping

from tempo.core.errors import BoundError
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
