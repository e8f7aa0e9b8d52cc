"""User functions are checked against what they were declared to return.

A `source_udf` or `map_udf` declared `(3,)` float32 whose function returns a `(4,)` tensor,
or integers where floats were declared, would otherwise run on and yield wrong numbers
(backends cast and broadcast what they get). Every call is checked: one shape compare and
one dtype lookup cached per dtype (~0.5 us on an idle core, next to a Python call)."""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tempo.core import naming, ops
from tempo.core.dtype import DataType, dtypes
from tempo.core.errors import DTypeError, ShapeError, TempoError
from tempo.core.index_expr import Symbol
from tempo.core.ops_region import RegionOp
from tempo.core.sdg import SDG


class UDFSignatureError(TempoError, TypeError):
    """A user function that cannot take the arguments its UDF op passes it."""


def check_udf_signatures(sdg: SDG) -> None:
    """Before any run: every sink/map/source UDF's function must accept what the op calls
    it with (`sink_with_ts_udf(lambda v: ...)` would fail inside the run, in generated
    code, as a bare TypeError)."""
    for op in sdg.ops.values():
        if isinstance(op, RegionOp):
            for member, reads in zip(op.body, op.reads):
                _check_signature(member, len(reads))
        else:
            _check_signature(op, len(sdg.in_edges[op.op_id]))


def _check_signature(op: ops.Op, n_inputs: int) -> None:
    if not isinstance(op, ops.UDFSourceOp | ops.MapUDFOp | ops.SinkUDFOp):
        return
    n_in = 0 if isinstance(op, ops.UDFSourceOp) else n_inputs
    want = n_in + (1 if op.with_ts else 0)
    if not callable(op.fn):
        raise UDFSignatureError(
            f"{naming.kind(op)} {naming.at_site(op.site)} needs a function, got "
            f"{type(op.fn).__name__} {op.fn!r}", site=op.site)
    try:
        sig = inspect.signature(op.fn)
    except (TypeError, ValueError):  # builtins and C functions: nothing to check
        return
    try:
        sig.bind(*([None] * want))
    except TypeError:
        what = {0: "no arguments", 1: "1 argument"}.get(want, f"{want} arguments")
        parts = ["the tensor"] if n_in == 1 else [f"{n_in} tensors"] if n_in else []
        parts += ["the symbol values (a dict)"] if op.with_ts else []
        raise UDFSignatureError(
            f"the function given to {naming.kind(op)} {naming.at_site(op.site)} has "
            f"signature {sig}, but {naming.kind(op)} calls it with {what}"
            f"{' (' + ', '.join(parts) + ')' if parts else ''}", site=op.site) from None


def guard_udf(op: ops.Op, bound_values: Mapping[Symbol, int],
              names: Mapping[int, str] | None = None) -> ops.Op:
    """`op` with its user function wrapped by a result check (other ops unchanged);
    `names` are the user's `name=`s by op id, for the message."""
    if not isinstance(op, ops.UDFSourceOp | ops.MapUDFOp):
        return op
    return dataclasses.replace(op, fn=_checked(op, bound_values, (names or {}).get(op.op_id)))


def _checked(op: ops.UDFSourceOp | ops.MapUDFOp, bound_values: Mapping[Symbol, int],
             name: str | None) -> Callable[..., Any]:
    fn, declared = op.fn, op.shape
    static = tuple(declared.as_static()) if declared.is_static() else None
    kind_ok: dict[Any, bool] = {}

    def run(*args: Any) -> Any:
        out = fn(*args)
        shape = getattr(out, "shape", None)
        if shape is None or shape != static:  # torch.Size and numpy/jax tuples equal tuples
            got = _shape_of(out)
            want = static if static is not None else _resolve(declared, bound_values, args)
            if got != want and not _fits(got, want):
                raise ShapeError(_message(op, name, f"shape {naming.shape_word(got)}",
                                          f"shape {naming.shape_word(want)}"), site=op.site)
        dt = getattr(out, "dtype", None)
        key = dt if dt is not None else type(out)
        ok = kind_ok.get(key)
        if ok is None:
            ok = kind_ok[key] = _same_kind(out, op.dtype)
        if not ok:
            got_dt = naming.dtype_word(_dtype_of(out))
            raise DTypeError(_message(op, name, f"dtype {got_dt}",
                                      f"dtype {naming.dtype_word(op.dtype)}"), site=op.site)
        return out

    return run


def _message(op: ops.Op, name: str | None, got: str, want: str) -> str:
    fn = getattr(op, "fn", None)
    code = getattr(fn, "__code__", None)
    fn_name = getattr(fn, "__name__", "function")
    what = "a lambda" if fn_name == "<lambda>" else f"`{fn_name}`"
    if code is not None:
        what += f" (defined at {os.path.basename(code.co_filename)}:{code.co_firstlineno})"
    source = f"'{name}' ({naming.at_site(op.site)})" if name else naming.at_site(op.site)
    return (f"the function given to {naming.kind(op)} {source} is {what}; "
            f"it returned a value of {got}, but {naming.kind(op)} declared {want}. Return "
            "what you declared (or declare what it returns)")


def _shape_of(x: Any) -> tuple[int, ...]:
    shape = getattr(x, "shape", None)
    return tuple(int(d) for d in shape) if shape is not None else tuple(np.shape(x))


def _dtype_of(x: Any) -> DataType:
    dt = getattr(x, "dtype", None)
    return dtypes.from_(dt if dt is not None else np.asarray(x).dtype)


def _same_kind(x: Any, declared: DataType) -> bool:
    """Bool, integer and float values each only fill their own kind; a wider float (numpy's
    float64 for a float32 declaration) is fine. Python ints may fill floats."""
    got = _dtype_of(x)
    if dtypes.is_float(declared):
        python_int = isinstance(x, int | list | tuple) and not dtypes.is_bool(got)
        return dtypes.is_float(got) or python_int
    if dtypes.is_integer(declared):
        return dtypes.is_integer(got)
    return dtypes.is_bool(got)


def _resolve(declared: Any, bound_values: Mapping[Symbol, int], args: tuple) -> tuple:
    """The declared shape with symbols evaluated where their values are known (bounds, and
    the point's variables for `*_with_ts_udf`); unknown dims stay symbolic."""
    env: dict[Symbol, int] = dict(bound_values)
    if args and isinstance(args[-1], dict):
        env.update({k: v for k, v in args[-1].items() if isinstance(k, Symbol)})
    out: list[Any] = []
    for d in declared:
        try:
            out.append(int(d) if isinstance(d, int) else int(d.evaluate(env)))
        except Exception:  # noqa: BLE001 - a dim we cannot know here stays unchecked
            out.append(d)
    return tuple(out)


def _fits(got: tuple[int, ...], want: tuple | None) -> bool:
    if want is None or len(got) != len(want):
        return False
    return all(not isinstance(w, int) or g == w for g, w in zip(got, want))
