"""Integer index expression nodes: constants, symbols, arithmetic, min/max and `Piecewise`;
their operators build nodes through the smart constructors of `simplify`."""

from __future__ import annotations

import builtins
import functools
import math
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tempo.core.errors import IndexExprError
from tempo.core.index_expr.base import (
    IndexExpr,
    IndexExprZeroDivisionError,
    IndexValue,
    IntLike,
    NonAffineIndexExprError,
    Number,
    _and_opt,
    nary_operands,
)
from tempo.core.index_expr.int_conversion import _tempo_no_branch, to_index, to_int

# ----------------------------------------------------------------------------- integer values


class IntIndexValue(IndexValue):
    """An integer-valued expression; arithmetic and comparisons build new nodes.
    `==`/`!=` build `Equal`/`Not(Equal)`, whose truth value is structural equality."""

    def __add__(self, o: IntLike) -> IntIndexValue:
        return _add(self, lift_to_int_ie(o))

    def __radd__(self, o: IntLike) -> IntIndexValue:
        return _add(lift_to_int_ie(o), self)

    def __sub__(self, o: IntLike) -> IntIndexValue:
        return _sub(self, lift_to_int_ie(o))

    def __rsub__(self, o: IntLike) -> IntIndexValue:
        return _sub(lift_to_int_ie(o), self)

    def __mul__(self, o: IntLike) -> IntIndexValue:
        return _mul(self, lift_to_int_ie(o))

    def __rmul__(self, o: IntLike) -> IntIndexValue:
        return _mul(lift_to_int_ie(o), self)

    def __floordiv__(self, o: IntLike) -> IntIndexValue:
        return _floordiv(self, lift_to_int_ie(o))

    def __rfloordiv__(self, o: IntLike) -> IntIndexValue:
        return _floordiv(lift_to_int_ie(o), self)

    def __mod__(self, o: IntLike) -> IntIndexValue:
        return _mod(self, lift_to_int_ie(o))

    def __rmod__(self, o: IntLike) -> IntIndexValue:
        return _mod(lift_to_int_ie(o), self)

    def __pow__(self, o: IntLike) -> IntIndexValue:
        return _pow(self, lift_to_int_ie(o))

    def __rpow__(self, o: IntLike) -> IntIndexValue:
        return _pow(lift_to_int_ie(o), self)

    def __truediv__(self, o: IntLike) -> IntIndexValue:
        return _truediv(self, lift_to_int_ie(o))

    def __rtruediv__(self, o: IntLike) -> IntIndexValue:
        return _truediv(lift_to_int_ie(o), self)

    def __neg__(self) -> IntIndexValue:
        return _neg(self)

    def __pos__(self) -> IntIndexValue:
        return self

    def __lt__(self, o: IntLike) -> BooleanIndexValue:
        return _cmp(LessThan, self, lift_to_int_ie(o))

    def __le__(self, o: IntLike) -> BooleanIndexValue:
        return _cmp(LessThanOrEqual, self, lift_to_int_ie(o))

    def __gt__(self, o: IntLike) -> BooleanIndexValue:
        return _cmp(GreaterThan, self, lift_to_int_ie(o))

    def __ge__(self, o: IntLike) -> BooleanIndexValue:
        return _cmp(GreaterThanOrEqual, self, lift_to_int_ie(o))

    def symb_eq(self, o: IntLike) -> BooleanIndexValue:
        """The condition `self == o` as a node."""
        return _cmp(Equal, self, lift_to_int_ie(o))

    def symb_ne(self, o: IntLike) -> BooleanIndexValue:
        """The condition `self != o` as a node (`Not(Equal)`)."""
        return ~_cmp(Equal, self, lift_to_int_ie(o))

    # ignore: symbolic comparison, as for tensors: an expression, not a bool
    def __eq__(self, o: object) -> BooleanIndexValue:  # type: ignore[override]
        if not isinstance(o, (int, IntIndexValue)):
            return NotImplemented
        return self.symb_eq(o)

    # ignore: symbolic comparison, as for tensors: an expression, not a bool
    def __ne__(self, o: object) -> BooleanIndexValue:  # type: ignore[override]
        if not isinstance(o, (int, IntIndexValue)):
            return NotImplemented
        return self.symb_ne(o)

    def __hash__(self) -> int:
        return self._hash

    def __int__(self) -> int:
        return to_int(self)

    def __index__(self) -> int:
        """A constant expression is an int; a symbolic one raises what `range(T)` meets."""
        return to_index(self)

    def evaluate_int(self, values: Mapping[Symbol, int]) -> int:
        """The value at `values` as a Python int."""
        return int(self.evaluate(values))

    def simplify(self) -> IndexExpr:
        """Children simplified, then linear terms collected (`t + T - t` → `T`) and constant
        factors divided out of `//` and `%` by constants."""
        e = super().simplify()
        if isinstance(e, (Add, Sub, Neg, Mul)):
            return _from_linear(*_linear(e))
        if isinstance(e, (FloorDivision, Modulos)):
            d = _const_int(e.right_operand)
            if d is not None and d != 0:
                terms, c = _linear(e.left_operand)
                if isinstance(e, FloorDivision):
                    divisible = all(k % d == 0 for _, k in terms.values())
                    if isinstance(c, int) and c % d == 0 and divisible:
                        return _from_linear({a: (x, k // d) for a, (x, k) in terms.items()}, c // d)
                else:
                    kept = {a: (x, k) for a, (x, k) in terms.items() if k % d != 0}
                    if len(kept) < len(terms) and isinstance(c, int):
                        return _mod(_from_linear(kept, c % d), e.right_operand)
        return e


@dataclass(frozen=True, eq=False, repr=False)
class ConstInt(IntIndexValue):
    """An integer (or, as `ConstFloat`, float) constant."""

    const: Number

    def _key(self) -> tuple[Any, ...]:
        return ("ConstInt", self.const)

    def evaluate(self, values: Mapping[Symbol, int]) -> Number:
        return self.const

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        return repr(self.const) if self.const >= 0 else f"({self.const!r})"

    def to_isl(self) -> str:
        if not isinstance(self.const, int):
            return super().to_isl()
        return str(self.const) if self.const >= 0 else f"({self.const})"

    def __str__(self) -> str:
        return str(self.const)


ConstFloat = ConstInt


@dataclass(frozen=True, eq=False, repr=False)
class Symbol(IntIndexValue):
    """A named integer symbol: a loop variable (`t`) or its bound (`T`, `is_bound=True`).
    Hash and equality use the name only, so fresh equal-named symbols find dict entries."""

    name: str
    is_bound: bool = False
    idx: int = -1
    owner: int = 0  # the making TempoContext's id (0: none): tells two contexts' d0 apart

    def _key(self) -> tuple[Any, ...]:
        return ("Symbol", self.name)

    @functools.cached_property
    def _hash(self) -> int:
        return hash(self.name)

    def evaluate(self, values: Mapping[Symbol, int]) -> int:
        return values[self]

    def _remap(self, mapping: Mapping[Symbol, IndexExpr]) -> IndexExpr:
        return mapping.get(self, self)

    def is_variable(self) -> bool:
        """True for a loop variable, False for a bound symbol."""
        return not self.is_bound

    def as_bound(self) -> Symbol:
        """The upper-case bound twin (`t` → `T`)."""
        if self.is_bound:
            return self
        return Symbol(self.name.upper(), True, self.idx + 1 if self.idx >= 0 else -1, self.owner)

    def as_var(self) -> Symbol:
        """The lower-case variable twin (`T` → `t`)."""
        if not self.is_bound:
            return self
        return Symbol(self.name.lower(), False, self.idx - 1 if self.idx >= 1 else -1, self.owner)

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        return names.get(self.name, self.name) if names else self.name

    def to_isl(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False, repr=False)
class _IntBinary(IntIndexValue):
    left_operand: IntIndexValue
    right_operand: IntIndexValue

    def children(self) -> tuple[IndexExpr, ...]:
        return (self.left_operand, self.right_operand)

    @abstractmethod
    def _fn(self, a: Any, b: Any) -> Any:
        """The Python operator this node applies."""

    def evaluate(self, values: Mapping[Symbol, int]) -> Any:
        return self._fn(self.left_operand.evaluate(values), self.right_operand.evaluate(values))

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        return f"({self.left_operand.to_py(names)} {self.OP} {self.right_operand.to_py(names)})"

    def __str__(self) -> str:
        return f"({self.left_operand} {self.OP} {self.right_operand})"

    OP = "?"


class Add(_IntBinary):
    """`left + right`."""

    OP = "+"

    def _fn(self, a: Any, b: Any) -> Any:
        return a + b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _add(c[0], c[1])  # type: ignore[arg-type]  # own children (see IndexExpr._rebuild)

    def to_isl(self) -> str:
        return f"({self.left_operand.to_isl()} + {self.right_operand.to_isl()})"


class Sub(_IntBinary):
    """`left - right`."""

    OP = "-"

    def _fn(self, a: Any, b: Any) -> Any:
        return a - b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _sub(c[0], c[1])  # type: ignore[arg-type]  # own children (see IndexExpr._rebuild)

    def to_isl(self) -> str:
        return f"({self.left_operand.to_isl()} - {self.right_operand.to_isl()})"


class Mul(_IntBinary):
    """`left * right` (isl needs one side to be an integer constant)."""

    OP = "*"

    def _fn(self, a: Any, b: Any) -> Any:
        return a * b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _mul(c[0], c[1])  # type: ignore[arg-type]  # own children (see IndexExpr._rebuild)

    def to_isl(self) -> str:
        a, b = self.left_operand, self.right_operand
        for c, x in ((a, b), (b, a)):
            v = _const_int(c)
            if v is not None:
                return f"({v} * {x.to_isl()})"
        raise NonAffineIndexExprError(f"{self} multiplies two symbols")


class FloorDivision(_IntBinary):
    """`left // right`, rounding towards minus infinity as Python and isl do."""

    OP = "//"

    def _fn(self, a: Any, b: Any) -> Any:
        if b == 0:
            raise IndexExprZeroDivisionError(f"division by zero in {self}")
        return a // b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        # ignore: own children (see IndexExpr._rebuild)
        return _floordiv(c[0], c[1])  # type: ignore[arg-type]

    def to_isl(self) -> str:
        d = _const_int(self.right_operand)
        if d is None or d == 0:
            raise NonAffineIndexExprError(f"{self} divides by other than a nonzero constant")
        a = self.left_operand.to_isl()
        return f"floor(({a})/{d})" if d > 0 else f"floor((-({a}))/{-d})"


class Modulos(_IntBinary):
    """`left % right`, with Python's sign convention (result has the divisor's sign)."""

    OP = "%"

    def _fn(self, a: Any, b: Any) -> Any:
        if b == 0:
            raise IndexExprZeroDivisionError(f"modulo by zero in {self}")
        return a % b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _mod(c[0], c[1])  # type: ignore[arg-type]  # own children (see IndexExpr._rebuild)

    def to_isl(self) -> str:
        d = _const_int(self.right_operand)
        if d is None or d == 0:
            raise NonAffineIndexExprError(f"{self} takes a modulus other than a nonzero constant")
        a = self.left_operand.to_isl()
        return f"(({a}) mod {d})" if d > 0 else f"(({a}) + {-d} * floor((-({a}))/{-d}))"


class Pow(_IntBinary):
    """`left ** right`."""

    OP = "**"

    def _fn(self, a: Any, b: Any) -> Any:
        return a**b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _pow(c[0], c[1])  # type: ignore[arg-type]  # own children (see IndexExpr._rebuild)


class TrueDivision(_IntBinary):
    """`left / right` with a float result (only `Ceil`/`Floor` of it reach isl)."""

    OP = "/"

    def _fn(self, a: Any, b: Any) -> Any:
        if b == 0:
            raise IndexExprZeroDivisionError(f"division by zero in {self}")
        return a / b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        # ignore: own children (see IndexExpr._rebuild)
        return _truediv(c[0], c[1])  # type: ignore[arg-type]


@dataclass(frozen=True, eq=False, repr=False)
class _IntUnary(IntIndexValue):
    operand: IntIndexValue

    def children(self) -> tuple[IndexExpr, ...]:
        return (self.operand,)


class Neg(_IntUnary):
    """`-operand`."""

    def evaluate(self, values: Mapping[Symbol, int]) -> Any:
        return -self.operand.evaluate(values)

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _neg(c[0])  # type: ignore[arg-type]  # own children (see IndexExpr._rebuild)

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        return f"(-{self.operand.to_py(names)})"

    def to_isl(self) -> str:
        return f"(-({self.operand.to_isl()}))"

    def __str__(self) -> str:
        return f"(-{self.operand})"


class Ceil(_IntUnary):
    """The smallest integer not below `operand`."""

    def evaluate(self, values: Mapping[Symbol, int]) -> Any:
        return math.ceil(self.operand.evaluate(values))

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return ceil(c[0])  # type: ignore[arg-type]  # own children (see IndexExpr._rebuild)

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        o = self.operand
        if isinstance(o, TrueDivision):  # exact integer ceil-division, no float rounding
            return f"(-((-{o.left_operand.to_py(names)}) // {o.right_operand.to_py(names)}))"
        return f"math.ceil({o.to_py(names)})"

    def to_isl(self) -> str:
        o = self.operand
        d = _const_int(o.right_operand) if isinstance(o, TrueDivision) else None
        if not isinstance(o, TrueDivision) or d is None or d <= 0:
            return super().to_isl()
        return f"ceil(({o.left_operand.to_isl()})/{d})"

    def __str__(self) -> str:
        return f"ceil({self.operand})"


class Floor(_IntUnary):
    """The largest integer not above `operand`."""

    def evaluate(self, values: Mapping[Symbol, int]) -> Any:
        return math.floor(self.operand.evaluate(values))

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return floor(c[0])  # type: ignore[arg-type]  # own children (see IndexExpr._rebuild)

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        o = self.operand
        if isinstance(o, TrueDivision):
            return f"({o.left_operand.to_py(names)} // {o.right_operand.to_py(names)})"
        return f"math.floor({o.to_py(names)})"

    def to_isl(self) -> str:
        o = self.operand
        if isinstance(o, TrueDivision):
            return FloorDivision(o.left_operand, o.right_operand).to_isl()
        return super().to_isl()

    def __str__(self) -> str:
        return f"floor({self.operand})"


@dataclass(frozen=True, eq=False, repr=False)
class _MinMax(IntIndexValue):
    operands: tuple[IntIndexValue, ...]

    def __init__(self, *operands: Any, **kw: Any) -> None:
        """`Min(operands)` (one sequence, API.md §2.1) or `Min(a, b, ...)`."""
        object.__setattr__(self, "operands", nary_operands(self, operands, kw, lift_to_int_ie))

    FN = staticmethod(builtins.min)
    NAME = "min"

    def children(self) -> tuple[IndexExpr, ...]:
        return self.operands

    def evaluate(self, values: Mapping[Symbol, int]) -> Any:
        return type(self).FN(*(o.evaluate(values) for o in self.operands))

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        return f"{self.NAME}({', '.join(o.to_py(names) for o in self.operands)})"

    def to_isl(self) -> str:
        acc = self.operands[0].to_isl()
        for o in self.operands[1:]:
            acc = f"{self.NAME}({acc}, {o.to_isl()})"
        return acc

    def __str__(self) -> str:
        return f"{self.NAME}({', '.join(str(o) for o in self.operands)})"


class Min(_MinMax):
    """The smallest of `operands`."""

    FN = staticmethod(builtins.min)
    NAME = "min"

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return min(*c)


class Max(_MinMax):
    """The largest of `operands`."""

    FN = staticmethod(builtins.max)
    NAME = "max"

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return max(*c)


@dataclass(frozen=True, eq=False, repr=False)
class Piecewise(IntIndexValue):
    """`(cond, value)` pairs; the value of the first pair whose condition holds.
    Evaluating where no condition holds raises IndexExprError."""

    conds_and_branches: tuple[tuple[BooleanIndexValue, IntIndexValue], ...]

    def children(self) -> tuple[IndexExpr, ...]:
        return tuple(x for pair in self.conds_and_branches for x in pair)

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        # ignore: own children (see IndexExpr._rebuild)
        return piecewise([(c[i], c[i + 1]) for i in range(0, len(c), 2)])  # type: ignore[misc]

    def evaluate(self, values: Mapping[Symbol, int]) -> Any:
        for cond, val in self.conds_and_branches:
            if cond.evaluate(values):
                return val.evaluate(values)
        raise IndexExprError(f"no branch of {self} holds at {dict(values)}")

    def enumerate_all_cond_branches(self) -> list[tuple[BooleanIndexValue | None, IndexExpr]]:
        out: list[tuple[BooleanIndexValue | None, IndexExpr]] = []
        earlier: BooleanIndexValue = ConstBool(False)
        for raw, val in self.conds_and_branches:
            cond = raw
            if _has_piecewise(raw):  # make the condition piecewise-free first
                alts = raw.enumerate_all_cond_branches()
                # the branches of a boolean condition are booleans
                flat = [lift_to_bool_ie(e) if c is None else c & lift_to_bool_ie(e)
                        for c, e in alts]
                cond = functools.reduce(_or, flat)
            mine = cond & ~earlier
            earlier = earlier | cond
            for vcond, vval in val.enumerate_all_cond_branches():
                full = _and_opt(mine, vcond)
                if not (isinstance(full, ConstBool) and not full.const):
                    out.append((full, vval))
        return out

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        src = f"_tempo_no_branch({self.to_py_literal()!r})"
        for cond, val in reversed(self.conds_and_branches):
            if isinstance(cond, ConstBool) and cond.const:
                src = val.to_py(names)
            else:
                src = f"({val.to_py(names)} if {cond.to_py(names)} else {src})"
        return src

    def to_isl(self) -> str:
        raise NonAffineIndexExprError(
            f"isl has no expression syntax for {self}; use index_expr.isl_pieces for its branches"
        )

    def to_py_literal(self) -> str:
        """A short description used in the error of generated code."""
        return str(self)

    def __str__(self) -> str:
        inner = ", ".join(f"({c}, {v})" for c, v in self.conds_and_branches)
        return f"piecewise({inner})"


PY_GLOBALS: dict[str, Any] = {"math": math, "_tempo_no_branch": _tempo_no_branch}
"""The globals `to_py` sources need (`math`, `_tempo_no_branch`); pass to `eval`/`exec`."""


# Call-time dependencies, imported last to close the node <-> constructor cycle (see __init__).
from tempo.core.index_expr.bool_nodes import (  # noqa: E402
    BooleanIndexValue,
    ConstBool,
    Equal,
    GreaterThan,
    GreaterThanOrEqual,
    LessThan,
    LessThanOrEqual,
)
from tempo.core.index_expr.functions import (  # noqa: E402
    ceil,
    floor,
    lift_to_bool_ie,
    lift_to_int_ie,
    max,
    min,
    piecewise,
)
from tempo.core.index_expr.simplify import (  # noqa: E402
    _add,
    _cmp,
    _const_int,
    _floordiv,
    _from_linear,
    _has_piecewise,
    _linear,
    _mod,
    _mul,
    _neg,
    _or,
    _pow,
    _sub,
    _truediv,
)
