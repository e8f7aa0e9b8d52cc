"""Compile-time range of a symbolic index: `x.index(0, t)` on a dim of size 3 with T = 5
reaches 3 and 4. torch and numpy fail at run time there, but jax's jitted `take` fills
NaN silently, so the compiler refuses it once the bounds are known -- only where it can
prove an executed point reads outside the dim (a branch `tok[t < P] = p.index(0, t)` runs
only at t < P and is fine)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np

from tempo.core import naming, ops
from tempo.core.dtype import dtypes
from tempo.core.errors import ShapeError
from tempo.core.index_expr import Slice, Symbol
from tempo.core.op_sources import ConstOp, EvalSymbolOp
from tempo.core.sdg import SDG

MAX_POINTS = 1 << 14
"""An index op with more points than this is not checked (one evaluation per point)."""
MAX_BAD = 4096
"""At most this many out-of-range points are looked up in the executed domain."""
_ARITH_OPS = (ops.CastOp, ops.IdentOp, ops.UnaryOp, ops.BinaryOp)
_ARITH = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}

Point = tuple[int, ...]


def check_index_ranges(sdg: SDG, bounds: Mapping[Symbol, int]) -> None:
    """A ShapeError at the user's line for an index_select whose index is built only from
    symbols and constants and lands outside its dim at a point where the op runs."""
    found = []
    for op in sdg.ops.values():
        if not isinstance(op, ops.IndexSelectOp):
            continue
        bad = _out_of_range(sdg, op, bounds)
        if bad:
            found.append((op, bad))
    if not found:
        return
    import islpy as isl

    from tempo.compiler.passes import dead_code
    from tempo.schedule.isl_program import analyse, stmt_name

    live = dead_code.live_ops(sdg)  # an index nothing reads never runs
    found = [(op, bad) for op, bad in found if op.op_id in live]
    if not found:
        return
    graph = sdg.copy()
    graph.remove_ops([i for i in graph.ops if i not in live])
    try:  # the scheduler's executed domains, on the graph as recorded (minus dead code)
        an = analyse(graph, dict(bounds))
    except Exception:  # noqa: BLE001 - the scheduler reports its own errors later
        return
    for op, bad in found:
        name = stmt_name(op.op_id)
        names = [v.name for v in op.domain.variables]
        pts = sorted(bad)[:MAX_BAD]
        cons = " or ".join(
            "(" + " and ".join(f"{n} = {c}" for n, c in zip(names, p)) + ")" for p in pts)
        if names:
            where = f"{an.decl} -> {{ {name}[{', '.join(names)}] : {cons} }}"
        else:
            where = f"{an.decl} -> {{ {name}[] }}"
        hit = an.executed[name].intersect(isl.Set(where))
        if hit.is_empty():
            continue
        p = _first_point(hit, len(names))
        _raise(sdg, op, bad[p], p, bounds)


def _out_of_range(sdg: SDG, op: ops.IndexSelectOp,
                  bounds: Mapping[Symbol, int]) -> dict[Point, tuple[int, int, str]]:
    """The op's points whose index leaves `0:n`, each with its value, n and a description
    of the index; empty when the index is data-dependent or the sizes are not static."""
    src = [e for e in sdg.in_edges.get(op.op_id, []) if e.sink_in == 0]
    idx = [e for e in sdg.in_edges.get(op.op_id, []) if e.sink_in == 1]
    if len(src) != 1 or len(idx) != 1 or idx[0].cond is not None:
        return {}
    k = op.dim - src[0].expr.num_slices()
    n = sdg.tensors[src[0].src].shape.at(k) if k >= 0 else None
    if not isinstance(n, int):
        return {}
    dvars = op.domain.variables
    sizes = [bounds.get(v.as_bound()) for v in dvars]
    if any(s is None for s in sizes) or int(np.prod([s or 1 for s in sizes])) > MAX_POINTS:
        return {}
    if len(sdg.tensors[idx[0].src].shape) != 0:
        # a constant array of indices (token ids of an Embedding): the same at every point
        arr = _const_array(sdg, idx[0].src.op_id)
        if arr is None or arr.size == 0 or (0 <= arr.min() and arr.max() < n):
            return {}
        v = int(arr.min()) if arr.min() < 0 else int(arr.max())
        cdesc = f"the constant indices {np.array2string(arr.reshape(-1)[:8], separator=', ')}"
        return {tuple(p): (v, n, cdesc) for p in itertools.product(*(range(s or 0) for s in sizes))}
    desc = _describe(sdg, idx[0].src.op_id)
    if desc is None:
        return {}
    memo: dict[tuple[int, Point], Any] = {}
    out: dict[Point, tuple[int, int, str]] = {}
    for p in itertools.product(*(range(s or 0) for s in sizes)):
        values: dict[Symbol, int] = {**bounds, **dict(zip(dvars, p))}
        v = _read(sdg, idx[0], values, memo)
        if v is None:
            return {}
        # No wrapping from the end: torch's index_select (a vectorised index, any index on
        # a GPU) refuses negatives, so `index(0, t - 1)` at t = 0 worked only on some paths
        if not 0 <= int(v) < n:
            out[tuple(p)] = (int(v), n, desc)
    return out


def _const_array(sdg: SDG, op_id: int) -> np.ndarray | None:
    """The integer array a constant (through casts to integers and idents) holds."""
    op = sdg.ops[op_id]
    ins = sdg.in_edges.get(op_id, [])
    if isinstance(op, ConstOp) and dtypes.is_integer(op.dtype):
        return np.asarray(op.value)
    if isinstance(op, ops.CastOp | ops.IdentOp) and len(ins) == 1 and ins[0].is_point() \
            and dtypes.is_integer(sdg.tensors[ins[0].src].dtype):
        return _const_array(sdg, ins[0].src.op_id)
    return None


def _read(sdg: SDG, e: Any, values: Mapping[Symbol, int], memo: dict) -> Any:
    """The scalar edge `e` delivers at the reader's point `values`; None if unknown."""
    src = sdg.ops[e.src.op_id]
    if len(e.expr) != len(src.domain.variables) or any(isinstance(m, Slice) for m in e.expr):
        return None
    try:
        p = tuple(int(m.evaluate(values)) for m in e.expr)
    except Exception:  # noqa: BLE001 - an index the evaluator cannot take: unknown
        return None
    key = (src.op_id, p)
    if key not in memo:
        here = {**{b: v for b, v in values.items() if b.is_bound},
                **dict(zip(src.domain.variables, p))}
        memo[key] = _value(sdg, src, here, memo)
    return memo[key]


def _value(sdg: SDG, op: Any, values: Mapping[Symbol, int], memo: dict) -> Any:
    """The scalar `op` makes at point `values`, for symbol/constant arithmetic only."""
    ins = sorted(sdg.in_edges.get(op.op_id, []), key=lambda e: e.sink_in)
    if any(e.cond is not None for e in ins):
        return None
    if isinstance(op, EvalSymbolOp):
        try:
            v = op.symbol.evaluate(values)
        except Exception:  # noqa: BLE001
            return None
        return int(v) if isinstance(v, int | np.integer) else None
    if isinstance(op, ConstOp):
        return op.value.reshape(()).item() if op.value.size == 1 and op.value.ndim == 0 \
            else None
    if not isinstance(op, _ARITH_OPS):  # a merge, a load, any data: not symbol arithmetic
        return None
    args = [_read(sdg, e, values, memo) for e in ins]
    if any(a is None for a in args):
        return None
    if isinstance(op, ops.CastOp) and len(args) == 1:
        return int(args[0]) if dtypes.is_integer(op.dtype) else None
    if isinstance(op, ops.IdentOp) and len(args) == 1:
        return args[0]
    if isinstance(op, ops.UnaryOp) and op.fn == "neg" and len(args) == 1:
        return -args[0]
    if isinstance(op, ops.BinaryOp) and op.fn in _ARITH and len(args) == 2:
        return _ARITH[op.fn](args[0], args[1])
    return None


def _describe(sdg: SDG, op_id: int) -> str | None:
    """The index in the user's words (`t + 1`), None when it is not symbol arithmetic."""
    op = sdg.ops[op_id]
    ins = sorted(sdg.in_edges.get(op_id, []), key=lambda e: e.sink_in)
    if isinstance(op, EvalSymbolOp):
        return str(op.symbol)
    if isinstance(op, ConstOp):
        return str(op.value.reshape(()).item()) if op.value.size == 1 else None
    if not isinstance(op, _ARITH_OPS):
        return None
    subs = [_describe(sdg, e.src.op_id) for e in ins]
    if any(s is None for s in subs):
        return None
    if isinstance(op, ops.CastOp | ops.IdentOp) and len(subs) == 1:
        return subs[0]
    if isinstance(op, ops.UnaryOp) and op.fn == "neg" and len(subs) == 1:
        return f"-{subs[0]}"
    sign = {"add": "+", "sub": "-", "mul": "*"}
    if isinstance(op, ops.BinaryOp) and op.fn in sign and len(subs) == 2:
        return f"{subs[0]} {sign[op.fn]} {subs[1]}"
    return None


def _first_point(s: Any, ndim: int) -> Point:
    """The lexicographically first point of a nonempty isl set."""
    pt = s.lexmin().sample_point()
    import islpy as isl

    return tuple(int(pt.get_coordinate_val(isl.dim_type.set, i).to_python())
                 for i in range(ndim))


def _raise(sdg: SDG, op: ops.IndexSelectOp, bad: tuple[int, int, str], p: Point,
           bounds: Mapping[Symbol, int]) -> None:
    v, n, desc = bad
    if desc.startswith("the constant indices"):  # no point or bound matters
        raise ShapeError(f"{naming.op_label(op, sdg.names)} indexes dim {op.dim} of size {n} "
                         f"with {desc}, which include {v}: indices must lie in 0..{n - 1} "
                         "(jax would silently give NaN there)", site=op.site)
    at = ", ".join(f"{var} = {c}" for var, c in zip(op.domain.variables, p))
    used = ", ".join(f"{b} = {x}" for b, x in bounds.items())
    raise ShapeError(
        f"{naming.op_label(op, sdg.names)} indexes dim {op.dim} of size {n} with {desc}, "
        f"which reaches {v}" + (f" at {at}" if at else "") + (f" (with {used})" if used else "")
        + f": the index must lie in 0..{n - 1} wherever the op "
        f"runs (guard it with a branch, e.g. `y[t < {n}] = ...`, or shrink the bound)",
        site=op.site)

