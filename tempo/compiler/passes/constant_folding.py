"""Constant folding: an op whose inputs are all constants is evaluated at compile time
(numpy) and becomes a constant (a fill when every element is the same), in place.

Only ops whose result is exactly what every backend computes are folded: movement, casts
with representable values, exactly rounded arithmetic (+ - * / sqrt) in the op's own
dtype, comparisons, logic, integer sums, and symbols over bounds. Transcendentals, float
reductions and matmuls are left alone: their last bits differ between libraries."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from tempo.compiler.passes.symbol_ranges import decided, value_interval
from tempo.core import ops
from tempo.core.configs import TUNING, ExecutionConfig
from tempo.core.dtype import DataType, dtypes, is_float_np
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import Shape

# (op, input values, output dtype) -> value; each folder takes its own kind of op
Folder = Callable[[Any, list[np.ndarray], DataType], "np.ndarray | None"]


_VALUES: weakref.WeakKeyDictionary[ops.Op, np.ndarray] = weakref.WeakKeyDictionary()


def const_value(sdg: SDG, tid: TensorId) -> np.ndarray | None:
    """The value of a constant tensor (a const, or a fill of static shape), as the
    backends see it (in its dtype); None for anything else. (Do not modify it.)"""
    op = sdg.ops[tid.op_id]
    if not isinstance(op, ops.ConstOp | ops.FillOp):
        return None
    value = _VALUES.get(op)
    if value is None:
        info = sdg.tensors[tid]
        np_dt = dtypes.to_np(info.dtype)
        if isinstance(op, ops.ConstOp):
            value = np.asarray(op.value).astype(np_dt)
        elif info.shape.is_static():
            value = np.full(tuple(info.shape.as_static()), op.value, dtype=np_dt)
        else:
            return None
        _VALUES[op] = value
    return value


def read_value(sdg: SDG, e: Edge) -> np.ndarray | None:
    """The constant an edge delivers (point reads of constants only)."""
    if not e.is_point() or e.cond is not None:
        return None
    return const_value(sdg, e.src)


_CONSTANT = (ops.ConstOp, ops.FillOp)


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    for op in sdg.topological():
        if isinstance(op, ops.EvalSymbolOp) or (
            type(op) in FOLDERS and sdg.in_edges[op.op_id]
            and all(isinstance(sdg.ops[e.src.op_id], _CONSTANT) for e in sdg.in_edges[op.op_id])
        ):
            _fold(sdg, op)
        elif isinstance(op, ops.BinaryOp) and op.fn in _CMP:
            _fold_decided(sdg, op)
    return sdg


def _fold_decided(sdg: SDG, op: ops.BinaryOp) -> None:
    """A comparison of an index expression's value (`t`, `T - 1 - t`) with a constant, or
    with another such value, that the domain decides at every point (`t < limit` with
    T <= limit) becomes a fill of that truth (symbol_ranges)."""
    edges = sdg.in_edges[op.op_id]
    if all(isinstance(sdg.ops[e.src.op_id], _CONSTANT) for e in edges):
        return  # (folded by value)
    sides = [value_interval(sdg, e) for e in edges]
    a, b = sides if len(sides) == 2 else (None, None)
    truth = None if a is None or b is None else decided(op.fn, a, b)
    info = sdg.tensors[TensorId(op.op_id, 0)]
    if truth is None or not dtypes.is_bool(info.dtype) or not info.shape.is_static():
        return
    sdg.redefine(ops.FillOp(value=truth, shape=info.shape, dtype=info.dtype, op_id=op.op_id,
                            domain=op.domain, site=op.site, tags=op.tags))


def _fold(sdg: SDG, op: ops.Op) -> None:
    if op.num_outputs != 1:
        return
    info = sdg.tensors[TensorId(op.op_id, 0)]
    if not info.shape.is_static():
        return
    shape = tuple(info.shape.as_static())
    if int(np.prod(shape, dtype=np.int64)) * info.dtype.repr_bytes > TUNING.fold_limit_bytes:
        return
    with np.errstate(all="ignore"):
        out = _evaluate(sdg, op, info.dtype)
    if out is None:
        return
    out = np.asarray(out).astype(dtypes.to_np(info.dtype))
    if tuple(out.shape) == shape:
        sdg.redefine(_constant(op, out, info.dtype))


def _evaluate(sdg: SDG, op: ops.Op, dt: DataType) -> np.ndarray | None:
    if isinstance(op, ops.EvalSymbolOp):
        sym = op.symbol
        used = sym.bound_symbols_used()
        if sym.vars_used() or not used <= set(sdg.bound_defs) or used & sdg.ended_bounds:
            return None  # (an ended bound's value is known at run time only)
        return np.array(sym.evaluate(sdg.bound_defs))
    folder = FOLDERS.get(type(op))
    edges = sdg.in_edges[op.op_id]
    if folder is None or not edges:
        return None
    vals = [v for e in edges if (v := read_value(sdg, e)) is not None]
    if len(vals) < len(edges):
        return None
    return folder(op, vals, dt)


def _constant(op: ops.Op, value: np.ndarray, dt: DataType) -> ops.Op:
    """A fill when the value is one repeated element (cheap to store), else a const."""
    flat = value.reshape(-1)
    if flat.size > 1 and (flat.view(np.uint8).reshape(flat.size, -1) ==
                          flat[:1].view(np.uint8)).all():
        shape = Shape.from_(tuple(int(d) for d in value.shape))
        return ops.FillOp(value=flat[0].item(), shape=shape, dtype=dt, op_id=op.op_id,
                          domain=op.domain, site=op.site, tags=op.tags)
    return ops.ConstOp(value=value, dtype=dt, op_id=op.op_id, domain=op.domain, site=op.site,
                       tags=op.tags)


# ---------------------------------------------------------------- the evaluation table
def _same_dtype(args: list[np.ndarray]) -> bool:
    return len({a.dtype for a in args}) == 1


def _unary(op: ops.UnaryOp, a: list[np.ndarray], dt: DataType) -> np.ndarray | None:
    x = a[0]
    tests: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "not": np.logical_not, "isnan": np.isnan, "isinf": np.isinf}
    if op.fn in tests:
        return tests[op.fn](x)
    if op.fn in ("floor", "ceil", "round", "trunc") and not dtypes.is_float(dt):
        return x  # rounding an integer is the identity (numpy would go through float64)
    fns: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "neg": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil,
        "round": np.round, "trunc": np.trunc, "sqrt": np.sqrt}
    fn = fns.get(op.fn)
    if fn is None or (op.fn == "sqrt" and not dtypes.is_float(dt)):
        return None
    return fn(x.astype(dtypes.to_np(dt)))


_ARITH = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
          "maximum": np.maximum, "minimum": np.minimum}
_CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
        "eq": np.equal, "ne": np.not_equal}
_LOGIC = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def _binary(op: ops.BinaryOp, a: list[np.ndarray], dt: DataType) -> np.ndarray | None:
    if not _same_dtype(a):
        return None  # backends promote mixed operands by their own rules
    if op.fn in _CMP:
        return _CMP[op.fn](a[0], a[1])
    if op.fn in _LOGIC:
        return _LOGIC[op.fn](a[0].astype(bool), a[1].astype(bool)) if a[0].dtype == bool \
            else None
    fn = _ARITH.get(op.fn)
    if fn is None or (dtypes.is_bool(dt) and op.fn == "sub"):
        return None
    if op.fn == "div" and not dtypes.is_float(dt):
        return None
    np_dt = dtypes.to_np(dt)
    return fn(a[0].astype(np_dt), a[1].astype(np_dt))


def _cast(op: ops.CastOp, a: list[np.ndarray], dt: DataType) -> np.ndarray | None:
    x = a[0]
    if is_float_np(x.dtype) and not dtypes.is_float(dt) and not dtypes.is_bool(dt):
        info = np.iinfo(dtypes.to_np(dt))
        if not np.isfinite(x).all() or (x < info.min).any() or (x >= float(info.max) + 1).any():
            return None  # out of range: each library does its own thing
    return x.astype(dtypes.to_np(dt))


def _where(op: ops.WhereOp, a: list[np.ndarray], dt: DataType) -> np.ndarray | None:
    if a[1].dtype != a[2].dtype:
        return None
    return np.where(a[0].astype(bool), a[1], a[2])


def _sum(op: ops.SumOp, a: list[np.ndarray], dt: DataType) -> np.ndarray | None:
    if dtypes.is_float(dt) or not op.dims:
        return a[0] if not op.dims else None  # float sums depend on the summation order
    return np.sum(a[0].astype(dtypes.to_np(dt)), axis=op.dims, keepdims=op.keepdim)


def _slice(op: ops.SliceOp, a: list[np.ndarray], dt: DataType) -> np.ndarray | None:
    if not isinstance(op.start, int) or not isinstance(op.length, int):
        return None
    return np.take(a[0], np.arange(op.start, op.start + op.length), axis=op.dim)


def _pad(op: ops.PadOp, a: list[np.ndarray], dt: DataType) -> np.ndarray | None:
    if op.mode != "constant" or any(p < 0 for pair in op.padding for p in pair):
        return None
    widths = [tuple(op.padding[d]) if d < len(op.padding) else (0, 0) for d in range(a[0].ndim)]
    return np.pad(a[0], widths, mode="constant",
                  constant_values=np.array(op.value).astype(a[0].dtype))


def _index_select(op: ops.IndexSelectOp, a: list[np.ndarray], dt: DataType) -> np.ndarray | None:
    x, idx = a
    if (idx < 0).any() or (idx >= x.shape[op.dim]).any():
        return None
    return np.take(x, idx, axis=op.dim)


def _static(shape: Any) -> tuple[int, ...] | None:
    dims = tuple(shape)
    return dims if all(isinstance(d, int) for d in dims) else None


def _reshape(op: ops.ReshapeOp, a: list[np.ndarray], dt: DataType) -> np.ndarray | None:
    shape = _static(op.shape)
    return None if shape is None else a[0].reshape(shape)


def _expand(op: ops.ExpandOp, a: list[np.ndarray], dt: DataType) -> np.ndarray | None:
    shape = _static(op.shape)
    return None if shape is None else np.broadcast_to(a[0], shape).copy()


FOLDERS: dict[type[ops.Op], Folder] = {
    ops.IdentOp: lambda op, a, dt: a[0],
    ops.ReshapeOp: _reshape,
    ops.PermuteOp: lambda op, a, dt: np.transpose(a[0], op.dims),
    ops.ExpandOp: _expand,
    ops.SliceOp: _slice,
    ops.PadOp: _pad,
    ops.CatOp: lambda op, a, dt: (
        np.concatenate(a, axis=op.dim) if _same_dtype(a) else None),
    ops.FlipOp: lambda op, a, dt: np.flip(a[0], op.dims).copy(),
    ops.IndexSelectOp: _index_select,
    ops.UnaryOp: _unary,
    ops.BinaryOp: _binary,
    ops.WhereOp: _where,
    ops.CastOp: _cast,
    ops.SumOp: _sum,
}
"""Op kind -> numpy evaluation giving exactly the backends' result (None: do not fold)."""
