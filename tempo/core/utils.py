"""Helpers users import from `tempo.core.utils` (API §1.2).
Only `make_symbols`: the variable/bound pairs of a universe."""

from __future__ import annotations

import keyword
from collections.abc import Sequence
from typing import Any

from tempo.core.errors import IndexExprError, user_site

# Words isl's parser reserves, and names the generated code binds: a dimension (or its
# upper-case bound) with one of these names would be misread by isl or shadowed at run time.
_RESERVED = frozenset({"and", "or", "not", "xor", "implies", "min", "max", "mod", "floor",
                       "ceil", "exists", "true", "false", "infty", "nan", "rat", "math"})


def make_symbols(names: Sequence[str], start_idx: int = 0,
                 owner: int = 0) -> list[tuple[Any, Any]]:
    """`(Symbol(n.lower(), idx=2k), Symbol(n.upper(), is_bound=True, idx=2k+1))` per name,
    k counting from `start_idx`; equal symbol names would alias, so names must differ.
    `owner` tags them with the id of the TempoContext they belong to (see `Symbol`)."""
    from tempo.core.index_expr import Symbol

    if isinstance(names, str):
        names = [names]
    lowered = [str(n).lower() for n in names]
    dups = sorted({n for n in lowered if lowered.count(n) > 1})
    if dups:
        raise IndexExprError(f"make_symbols: duplicate names {dups}", site=user_site())
    if any(not n or not n.isidentifier() for n in lowered):
        raise IndexExprError(f"make_symbols: names must be identifiers, got {list(names)}",
                             site=user_site())
    bad = [n for n in names if str(n).lower() in _RESERVED or keyword.iskeyword(str(n).lower())
           or keyword.iskeyword(str(n).upper())]
    if bad:
        raise IndexExprError(f"make_symbols: {bad} cannot name a dimension (reserved words: "
                             f"{', '.join(sorted(_RESERVED))} and Python keywords)",
                             site=user_site())
    out = []
    for k, n in enumerate(lowered, start=start_idx):
        out.append((Symbol(n, idx=2 * k, owner=owner),
                    Symbol(n.upper(), is_bound=True, idx=2 * k + 1, owner=owner)))
    return out
