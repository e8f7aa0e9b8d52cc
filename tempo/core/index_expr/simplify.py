"""The smart constructors behind the operators: each builds a node after light folding
(constants, offsets, `x - x`, boolean identities and absorption)."""

from __future__ import annotations

from typing import Any

from tempo.core.errors import user_site
from tempo.core.index_expr.base import IndexExpr, IndexExprZeroDivisionError, Number

# ----------------------------------------------------------------------------- smart constructors


def _const_int(e: IndexExpr) -> int | None:
    """The integer value of a symbol-free expression, else None."""
    if isinstance(e, ConstInt) and isinstance(e.const, int):
        return e.const
    return None


def _c(e: IndexExpr) -> Number | None:
    return e.const if isinstance(e, ConstInt) else None


def _split_offset(e: IntIndexValue) -> tuple[IntIndexValue, Number]:
    """`x + c` → `(x, c)`, `x - c` → `(x, -c)`, a constant → `(0, c)`, else `(e, 0)`."""
    if isinstance(e, ConstInt):
        return ConstInt(0), e.const
    if isinstance(e, (Add, Sub)) and isinstance(e.right_operand, ConstInt):
        c = e.right_operand.const
        return e.left_operand, c if isinstance(e, Add) else -c
    return e, 0


def _offset(x: IntIndexValue, c: Number) -> IntIndexValue:
    """`x + c` written as `x + c`, `x - |c|` or `x`."""
    if isinstance(x, ConstInt):
        return ConstInt(x.const + c)
    if c == 0:
        return x
    return Add(x, ConstInt(c)) if c > 0 else Sub(x, ConstInt(-c))


def _scaled(e: IntIndexValue) -> tuple[int, IntIndexValue] | None:
    """(f, x) when `e` is `-x` or `f * x` with a constant int f."""
    if isinstance(e, Neg):
        return -1, e.operand
    if isinstance(e, Mul):
        f = _const_int(e.left_operand)
        return None if f is None else (f, e.right_operand)
    return None


_Terms = dict[tuple[Any, ...], tuple["IntIndexValue", Any]]


def _linear(e: IntIndexValue) -> tuple[_Terms, Number]:
    """`e` as `{atom key: (atom, coefficient)}` plus a constant (non-linear parts are atoms)."""
    if isinstance(e, ConstInt):
        return {}, e.const
    if isinstance(e, (Add, Sub)):
        ta, ca = _linear(e.left_operand)
        tb, cb = _linear(e.right_operand)
        sign = 1 if isinstance(e, Add) else -1
        for k, (x, c) in tb.items():
            ta[k] = (x, ta.get(k, (x, 0))[1] + sign * c)
        return ta, ca + sign * cb
    scaled = _scaled(e)
    if scaled is not None:
        f, inner = scaled
        t, c = _linear(inner)
        return {k: (x, f * v) for k, (x, v) in t.items()}, f * c
    return {e._key(): (e, 1)}, 0


def _from_linear(terms: _Terms, const: Number) -> IntIndexValue:
    """Rebuild `sum(coef * atom) + const` with subtraction for negative coefficients."""
    acc: IntIndexValue | None = None
    for x, k in terms.values():
        if k == 0:
            continue
        if acc is None:
            acc = _mul(ConstInt(k), x)
        elif k < 0:
            acc = _sub(acc, _mul(ConstInt(-k), x))
        else:
            acc = _add(acc, _mul(ConstInt(k), x))
    return ConstInt(const) if acc is None else _offset(acc, const)


def _add(a: IntIndexValue, b: IntIndexValue) -> IntIndexValue:
    if isinstance(a, ConstInt) and not isinstance(b, ConstInt):
        a, b = b, a
    if isinstance(b, ConstInt):
        x, c = _split_offset(a)
        return _offset(x, c + b.const)
    if isinstance(b, Neg):
        return _sub(a, b.operand)
    return Add(a, b)


def _sub(a: IntIndexValue, b: IntIndexValue) -> IntIndexValue:
    xa, ca = _split_offset(a)
    xb, cb = _split_offset(b)
    if xa.struct_eq(xb):
        return ConstInt(ca - cb)
    if isinstance(b, ConstInt):
        return _offset(xa, ca - b.const)
    if _c(a) == 0:
        return _neg(b)
    if isinstance(b, Neg):
        return _add(a, b.operand)
    return Sub(a, b)


def _mul(a: IntIndexValue, b: IntIndexValue) -> IntIndexValue:
    if isinstance(b, ConstInt) and not isinstance(a, ConstInt):
        a, b = b, a  # constant first: `2*t`
    ca, cb = _c(a), _c(b)
    if ca is not None and cb is not None:
        return ConstInt(ca * cb)
    if ca == 0:
        return ConstInt(0)
    if ca == 1:
        return b
    if ca == -1:
        return _neg(b)
    if ca is not None and isinstance(b, Mul) and isinstance(b.left_operand, ConstInt):
        return _mul(ConstInt(ca * b.left_operand.const), b.right_operand)
    return Mul(a, b)


def _floordiv(a: IntIndexValue, b: IntIndexValue) -> IntIndexValue:
    ca, cb = _c(a), _c(b)
    if cb == 0:
        raise IndexExprZeroDivisionError(f"floor division by zero: ({a}) // 0", site=user_site())
    if cb == 1:
        return a
    if ca is not None and cb is not None:
        return ConstInt(ca // cb)
    if ca == 0 or a.struct_eq(b):
        return ConstInt(0 if ca == 0 else 1)
    if (
        isinstance(cb, int)
        and isinstance(a, Mul)
        and isinstance(a.left_operand, ConstInt)
        and isinstance(a.left_operand.const, int)
        and a.left_operand.const % cb == 0
    ):
        return _mul(ConstInt(a.left_operand.const // cb), a.right_operand)
    return FloorDivision(a, b)


def _mod(a: IntIndexValue, b: IntIndexValue) -> IntIndexValue:
    ca, cb = _c(a), _c(b)
    if cb == 0:
        raise IndexExprZeroDivisionError(f"modulo by zero: ({a}) % 0", site=user_site())
    if cb == 1 or cb == -1 or ca == 0 or a.struct_eq(b):
        return ConstInt(0)
    if ca is not None and cb is not None:
        return ConstInt(ca % cb)
    return Modulos(a, b)


def _pow(a: IntIndexValue, b: IntIndexValue) -> IntIndexValue:
    ca, cb = _c(a), _c(b)
    if ca is not None and cb is not None:
        return ConstInt(ca**cb)
    if cb == 0:
        return ConstInt(1)
    if cb == 1:
        return a
    return Pow(a, b)


def _truediv(a: IntIndexValue, b: IntIndexValue) -> IntIndexValue:
    ca, cb = _c(a), _c(b)
    if cb == 0:
        raise IndexExprZeroDivisionError(f"division by zero: ({a}) / 0", site=user_site())
    if ca is not None and cb is not None:
        return ConstInt(ca / cb)
    return TrueDivision(a, b)


def _neg(a: IntIndexValue) -> IntIndexValue:
    if isinstance(a, ConstInt):
        return ConstInt(-a.const)
    if isinstance(a, Neg):
        return a.operand
    if isinstance(a, Sub):
        return _sub(a.right_operand, a.left_operand)
    return Neg(a)


def _has_true_div(e: IndexExpr) -> bool:
    if isinstance(e, (Ceil, Floor)):
        return False
    return isinstance(e, TrueDivision) or any(_has_true_div(c) for c in e.children())


def _has_piecewise(e: IndexExpr) -> bool:
    return isinstance(e, Piecewise) or any(_has_piecewise(c) for c in e.children())


def _cmp(kind: type, a: IntIndexValue, b: IntIndexValue) -> BooleanIndexValue:
    xa, ca = _split_offset(a)
    xb, cb = _split_offset(b)
    if xa.struct_eq(xb):  # covers two constants and `t+1 < t+3`
        return ConstBool(bool(_CMP_FN[kind](ca, cb)))
    return kind(a, b)


def _flat(kind: type[_BoolNary], e: BooleanIndexValue) -> tuple[BooleanIndexValue, ...]:
    return e.operands if isinstance(e, kind) else (e,)


def _and(a: BooleanIndexValue, b: BooleanIndexValue) -> BooleanIndexValue:
    return _junction(And, Or, a, b)


def _or(a: BooleanIndexValue, b: BooleanIndexValue) -> BooleanIndexValue:
    return _junction(Or, And, a, b)


def _junction(
    kind: type[_BoolNary], dual: type[_BoolNary], a: BooleanIndexValue, b: BooleanIndexValue
) -> BooleanIndexValue:
    """And/Or with folding: identity, domination, duplicates, `x op ~x`, absorption."""
    unit = kind is And  # True is the unit of And, False of Or
    ops: list[BooleanIndexValue] = []
    for o in (*_flat(kind, a), *_flat(kind, b)):
        if isinstance(o, ConstBool):
            if o.const == unit:
                continue
            return ConstBool(not unit)
        if any(o.struct_eq(p) for p in ops):
            continue
        neg = _not(o)
        if any(neg.struct_eq(p) for p in ops):
            return ConstBool(not unit)
        ops.append(o)
    # absorption: x & (x | y) → x ; x | (x & y) → x
    kept = [
        o
        for o in ops
        if not (
            isinstance(o, dual)
            and any(any(p.struct_eq(q) for q in o.operands) for p in ops if p is not o)
        )
    ]
    if not kept:
        return ConstBool(unit)
    if len(kept) == 1:
        return kept[0]
    return kind(tuple(kept))


def _not(a: BooleanIndexValue) -> BooleanIndexValue:
    if isinstance(a, ConstBool):
        return ConstBool(not a.const)
    if isinstance(a, Not):
        return a.operand
    if isinstance(a, _Compare) and type(a) in _CMP_NEG:
        return _CMP_NEG[type(a)](a.left_operand, a.right_operand)
    return Not(a)


# Call-time dependencies, imported last to close the node <-> constructor cycle (see __init__).
from tempo.core.index_expr.bool_nodes import (  # noqa: E402
    _CMP_FN,
    _CMP_NEG,
    And,
    BooleanIndexValue,
    ConstBool,
    Not,
    Or,
    _BoolNary,
    _Compare,
)
from tempo.core.index_expr.int_nodes import (  # noqa: E402
    Add,
    Ceil,
    ConstInt,
    Floor,
    FloorDivision,
    IntIndexValue,
    Modulos,
    Mul,
    Neg,
    Piecewise,
    Pow,
    Sub,
    TrueDivision,
)
