"""Module-level index expression functions: min/max/ceil/floor, `slice_`, `piecewise`, the
`lift_to_*` conversions, evaluation, equality tests, symbol creation and `compile_py`."""

from __future__ import annotations

import builtins
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tempo.core.errors import IndexExprError, user_site
from tempo.core.index_expr.base import BoolLike, IndexAtom, IndexExpr, IntLike, Number

# ----------------------------------------------------------------------------- module functions


def min(a: Any, b: Any = None, *rest: Any) -> IntIndexValue:  # noqa: A001
    """`Min` of the arguments (one argument → the argument lifted; constants folded)."""
    return _minmax(Min, builtins.min, a, b, rest)


def max(a: Any, b: Any = None, *rest: Any) -> IntIndexValue:  # noqa: A001
    """`Max` of the arguments (one argument → the argument lifted; constants folded)."""
    return _minmax(Max, builtins.max, a, b, rest)


def _minmax(kind: type[Min] | type[Max], fn: Callable[..., Any], a: Any, b: Any,
            rest: tuple[Any, ...]) -> Any:
    args = [a] if b is None else [a, b, *rest]
    if b is None and isinstance(a, (list, tuple)):
        args = list(a)
    ops: list[IntIndexValue] = []
    consts: list[Number] = []
    for x in args:
        e = lift_to_int_ie(x)
        for o in e.operands if isinstance(e, kind) else (e,):
            if isinstance(o, ConstInt):
                consts.append(o.const)
            elif not any(o.struct_eq(p) for p in ops):
                ops.append(o)
    if consts:
        ops.append(ConstInt(fn(consts)))
    if len(ops) == 1:
        return ops[0]
    return kind(tuple(ops))


def ceil(x: IntLike) -> IntIndexValue:
    """The ceiling of `x` (folds constants; identity on integer-valued trees)."""
    x = lift_to_int_ie(x)
    if isinstance(x, ConstInt):
        return ConstInt(math.ceil(x.const))
    if not _has_true_div(x):
        return x
    return Ceil(x)


def floor(x: IntLike) -> IntIndexValue:
    """The floor of `x` (folds constants; identity on integer-valued trees)."""
    x = lift_to_int_ie(x)
    if isinstance(x, ConstInt):
        return ConstInt(math.floor(x.const))
    if not _has_true_div(x):
        return x
    return Floor(x)


def slice_(start: IntLike, stop: IntLike) -> IndexAtom:
    """The slice `start:stop`; `stop == start+1` collapses to the point `start` (API §7).
    Equal or reversed constant bounds raise IndexExprError."""
    s, e = lift_to_int_ie(start), lift_to_int_ie(stop)
    diff = _sub(e, s)
    if isinstance(diff, ConstInt):
        if diff.const <= 0:
            raise IndexExprError(f"empty or reversed slice {s}:{e}", site=user_site())
        if diff.const == 1:
            return s
    return Slice(s, e)


def piecewise(pairs: Sequence[tuple[BoolLike, IntLike]]) -> IntIndexValue:
    """A `Piecewise` of `(cond, value)` pairs; constant-false pairs dropped, a leading
    constant-true pair returns its value."""
    kept: list[tuple[BooleanIndexValue, IntIndexValue]] = []
    for c, v in pairs:
        cond, val = lift_to_bool_ie(c), lift_to_int_ie(v)
        if isinstance(cond, ConstBool) and not cond.const:
            continue
        kept.append((cond, val))
        if isinstance(cond, ConstBool):
            break
    if not kept:
        raise IndexExprError("piecewise with no satisfiable branch", site=user_site())
    if isinstance(kept[0][0], ConstBool):
        return kept[0][1]
    return Piecewise(tuple(kept))


def lift_to_ie(x: Any) -> IndexExpr:
    """int → ConstInt, bool → ConstBool, `slice(a, b)` → `slice_`, sequence → IndexSequence."""
    if isinstance(x, IndexExpr):
        return x
    if isinstance(x, bool):
        return ConstBool(x)
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return ConstInt(x)
    if isinstance(x, slice):
        if x.start is None or x.stop is None or x.step not in (None, 1):
            raise IndexExprError(
                f"slice {x} needs explicit start and stop and step 1", site=user_site()
            )
        return slice_(x.start, x.stop)
    if hasattr(x, "__index__") and not isinstance(x, str):
        return ConstInt(x.__index__())
    if isinstance(x, (list, tuple)):
        return IndexSequence(tuple(lift_to_ie_atom(m) for m in x))
    raise IndexExprError(f"cannot lift {x!r} to an index expression", site=user_site())


def lift_to_int_ie(x: Any) -> IntIndexValue:
    """Lift to an integer expression or raise IndexExprError."""
    e: IndexExpr | None = x if isinstance(x, IntIndexValue) else None
    if e is None and not isinstance(x, bool):
        try:
            e = lift_to_ie(x)
        except IndexExprError:
            e = None
    if not isinstance(e, IntIndexValue):
        raise IndexExprError(f"{x!r} is not an integer index expression", site=user_site())
    return e


def lift_to_bool_ie(x: Any) -> BooleanIndexValue:
    """Lift to a boolean expression or raise IndexExprError."""
    if isinstance(x, BooleanIndexValue):
        return x
    if isinstance(x, bool):
        return ConstBool(x)
    raise IndexExprError(f"{x!r} is not a boolean index expression", site=user_site())


def lift_to_ie_atom(x: Any) -> IndexAtom:
    """Lift to one sequence member (value or slice)."""
    e = lift_to_ie(x)
    if not isinstance(e, IndexAtom):
        raise IndexExprError(f"{x!r} is not a single index atom", site=user_site())
    return e


def lift_to_ie_seq(x: Any) -> IndexSequence:
    """Lift to an IndexSequence (a single atom becomes a one-member sequence)."""
    e = lift_to_ie(x)
    if isinstance(e, IndexSequence):
        return e
    return IndexSequence((lift_to_ie_atom(e),))


def evaluate(e: Any, values: Mapping[Symbol, int] | None = None) -> Any:
    """`lift_to_ie(e).evaluate(values)`."""
    return lift_to_ie(e).evaluate(values or {})


def evaluate_int(e: Any, values: Mapping[Symbol, int] | None = None) -> int:
    """`evaluate` as a Python int."""
    return int(evaluate(e, values))


def struct_eq(*es: Any) -> bool:
    """True when all arguments are the same tree."""
    lifted = [lift_to_ie(e) for e in es]
    return all(lifted[0].struct_eq(o) for o in lifted[1:])


def logical_eq(*es: Any) -> bool:
    """True when all arguments take equal values everywhere (isl, else sympy)."""
    lifted = [lift_to_ie(e) for e in es]
    return all(lifted[0].logical_eq(o) for o in lifted[1:])


_NAME_SPLIT = re.compile(r"[\s,]+")


def symbols(names: str, start_idx: int = 0) -> Any:
    """Loop-variable symbols from a space/comma separated string (`symbols("a b")`).
    One name gives one Symbol; several give a tuple. `idx` follows make_symbols: 2k."""
    parts = [p for p in _NAME_SPLIT.split(names.strip()) if p]
    syms = tuple(Symbol(p, False, 2 * (start_idx + k)) for k, p in enumerate(parts))
    return syms[0] if len(syms) == 1 and not _NAME_SPLIT.search(names.strip()) else syms


def bound_symbols(names: str, start_idx: int = 0) -> Any:
    """Bound symbols (`is_bound=True`) from a string, like `symbols`; `idx` is 2k+1."""
    parts = [p for p in _NAME_SPLIT.split(names.strip()) if p]
    syms = tuple(Symbol(p, True, 2 * (start_idx + k) + 1) for k, p in enumerate(parts))
    return syms[0] if len(syms) == 1 and not _NAME_SPLIT.search(names.strip()) else syms


def compile_py(e: IndexExpr, arg_names: Sequence[str]) -> Callable[..., Any]:
    """`lambda *arg_names: <e.to_py()>` compiled once (a helper for tests and the runtime)."""
    src = f"lambda {', '.join(arg_names)}: {e.to_py()}"
    return eval(compile(src, f"<index_expr {e}>", "eval"), dict(PY_GLOBALS))


# Call-time dependencies, imported last to close the node <-> constructor cycle (see __init__).
from tempo.core.index_expr.bool_nodes import BooleanIndexValue, ConstBool  # noqa: E402
from tempo.core.index_expr.int_nodes import (  # noqa: E402
    PY_GLOBALS,
    Ceil,
    ConstInt,
    Floor,
    IntIndexValue,
    Max,
    Min,
    Piecewise,
    Symbol,
)
from tempo.core.index_expr.sequences import IndexSequence, Slice  # noqa: E402
from tempo.core.index_expr.simplify import _has_true_div, _sub  # noqa: E402
