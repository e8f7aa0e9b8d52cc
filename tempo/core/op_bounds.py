"""Bind the bounds into ops before their kernels are made (the runtime does it for every op;
the grouping pass for the members of a fused region, which it builds already bound).

An op parameter such as a reshape to (T, 64) is symbolic in the graph but constant for a
compiled program: its bounds are known at `ctx.compile(bounds)`. Substituting them first
lets the backend kernel factories take their static path (the shape is a bound constant,
not resolved from trailing args on every call), and the generated code passes nothing
for them. Only expressions over loop variables stay runtime args.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tempo.core.index_expr import IndexExpr, Symbol
from tempo.core.op_base import Op
from tempo.core.shape import Shape


def _bound_only(e: Any, bounds: Mapping[Symbol, int]) -> bool:
    """An expression of bounds only, all of them known: a bound a boolean tensor ends at
    run time (absent from `bounds`) stays a runtime arg, like a loop variable."""
    return (isinstance(e, IndexExpr) and not e.vars_used()
            and all(b in bounds for b in e.bound_symbols_used()))


def _resolve(value: Any, bounds: Mapping[Symbol, int]) -> Any:
    """`value` with every bound-only expression in it evaluated (None: nothing to do)."""
    if _bound_only(value, bounds):
        return int(value.evaluate(bounds))
    if isinstance(value, Shape) and not value.is_static():
        dims = list(value)
        if any(_bound_only(d, bounds) for d in dims):
            return Shape.from_(tuple(int(d.evaluate(bounds)) if _bound_only(d, bounds) else d
                                     for d in dims))
    return None


def bind_bounds(op: Op, bounds: Mapping[Symbol, int]) -> Op:
    """`op` with its bound-only runtime expressions replaced by their values (the same op
    when it has none)."""
    if not op.runtime_exprs():
        return op
    changes = {}
    for f in dataclasses.fields(op):
        if not f.init:
            continue
        new = _resolve(getattr(op, f.name), bounds)
        if new is not None:
            changes[f.name] = new
    return dataclasses.replace(op, **changes) if changes else op
