"""Comparisons of a loop variable with a constant that the domain decides.

`t < limit` where t only ranges over 0..T-1 and T <= limit is true at every point (the
env's step-limit test); constant folding makes it a fill, and `where` on it then picks
its branch (algebraic_rules `decided_where`). The range of an index expression over an
op's domain is taken by interval arithmetic from each variable's 0..bound-1, which
contains the exact range: a comparison true (or false) over the whole interval is so at
every point of the domain, and anything not provable stays an op.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from tempo.compiler.passes import constant_folding  # (a cycle: read at call time)
from tempo.core import ops
from tempo.core.dtype import DataType, dtypes
from tempo.core.index_expr import IndexExpr, Symbol
from tempo.core.index_expr import int_nodes as n
from tempo.core.sdg import SDG, Edge

Interval = tuple[int, int]


def interval(e: IndexExpr, ranges: Mapping[Symbol, Interval]) -> Interval | None:
    """Smallest and largest value of `e` when each symbol lies in its range (None when an
    operation of `e` is not covered, or a symbol has no range)."""
    if isinstance(e, n.ConstInt):
        return (int(e.const), int(e.const)) if float(e.const).is_integer() else None
    if isinstance(e, Symbol):
        return ranges.get(e)
    if isinstance(e, n.Neg):
        r = interval(e.operand, ranges)
        return None if r is None else (-r[1], -r[0])
    if not isinstance(e, (n.Add, n.Sub, n.Mul, n.Min, n.Max)):
        return None
    parts = [interval(c, ranges) for c in e.children()]
    got = [p for p in parts if p is not None]
    if len(got) != len(parts) or not got:
        return None
    if isinstance(e, (n.Min, n.Max)):
        pick = min if isinstance(e, n.Min) else max
        return (pick(p[0] for p in got), pick(p[1] for p in got))
    (a, b), (c, d) = got
    if isinstance(e, n.Add):
        return (a + c, b + d)
    if isinstance(e, n.Sub):
        return (a - d, b - c)
    corners = (a * c, a * d, b * c, b * d)
    return (min(corners), max(corners))


def value_interval(sdg: SDG, e: Edge, depth: int = 8) -> Interval | None:
    """The smallest and largest integer an edge delivers over its reader's domain: an
    index expression's value (`EvalSymbolOp`, from the compile-time bounds; a dimension
    ended by a boolean bound never passes its maximum, its bound's value here), an
    integer constant, or integer `+ - *` and negation of such values (what
    `from_expr(T - 1 - t)` records) that stay inside their dtype. None: not known."""
    if e.cond is not None or not e.is_point() or depth == 0:
        return None
    src = sdg.ops[e.src.op_id]
    dt = sdg.tensors[e.src].dtype
    if dtypes.is_float(dt) or dtypes.is_bool(dt):
        return None
    if isinstance(src, ops.EvalSymbolOp):
        at = dict(zip(src.domain.variables, e.expr))
        return interval(src.symbol.remap(at) if at else src.symbol, _ranges(sdg, e.sink))
    value = constant_folding.const_value(sdg, e.src)
    if value is not None:
        return (int(value.min()), int(value.max())) if value.size else None
    inputs = sdg.in_edges[src.op_id]
    if isinstance(src, ops.CastOp) or (isinstance(src, ops.UnaryOp) and src.fn == "neg"):
        got = value_interval(sdg, inputs[0], depth - 1)
        if got is None or isinstance(src, ops.CastOp):
            return _within(got, dt)
        return _within((-got[1], -got[0]), dt)
    if not (isinstance(src, ops.BinaryOp) and src.fn in ("add", "sub", "mul")):
        return None
    a, b = (value_interval(sdg, x, depth - 1) for x in inputs)
    if a is None or b is None:
        return None
    if src.fn == "add":
        return _within((a[0] + b[0], a[1] + b[1]), dt)
    if src.fn == "sub":
        return _within((a[0] - b[1], a[1] - b[0]), dt)
    corners = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return _within((min(corners), max(corners)), dt)


def _ranges(sdg: SDG, op_id: int) -> dict[Symbol, Interval]:
    """Each variable of the op's domain in 0..bound-1, each bound at its value."""
    ranges: dict[Symbol, Interval] = {}
    for v in sdg.ops[op_id].domain.variables:
        top = sdg.bound_defs.get(v.as_bound())
        if isinstance(top, (int, np.integer)) and top > 0:
            ranges[v] = (0, int(top) - 1)
    for b, value in sdg.bound_defs.items():
        if isinstance(value, (int, np.integer)):
            ranges[b] = (int(value), int(value))
    return ranges


def _within(r: Interval | None, dt: DataType) -> Interval | None:
    """`r` when the dtype holds it (else the backend's wrap-around makes it unknown)."""
    if r is None:
        return None
    info = np.iinfo(dtypes.to_np(dt))
    return r if info.min <= r[0] and r[1] <= info.max else None


_DECIDE = {"lt": lambda a, b, c: (b < c[0], a >= c[1]),
           "le": lambda a, b, c: (b <= c[0], a > c[1]),
           "gt": lambda a, b, c: (a > c[1], b <= c[0]),
           "ge": lambda a, b, c: (a >= c[1], b < c[0])}
"""(always true, always false) of `x <op> y` for x in [a, b] and y in [c0, c1]."""


def decided(fn: str, left: Interval, right: Interval) -> bool | None:
    """The value of `left <fn> right` for every pair of values in the two intervals, or
    None when it depends on them."""
    rule = _DECIDE.get(fn)
    if fn in ("eq", "ne"):
        apart = left[1] < right[0] or right[1] < left[0]
        same = left[0] == left[1] == right[0] == right[1]
        if not (apart or same):
            return None
        return same if fn == "eq" else apart
    if rule is None:
        return None
    true, false = rule(left[0], left[1], right)
    return True if true else (False if false else None)
