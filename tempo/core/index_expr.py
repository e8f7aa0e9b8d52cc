"""Symbolic index expressions: immutable, hashable trees over integer symbols (API.md §2).
They index recurrent tensors, guard branches, bound dimensions and size symbolic shapes."""

from __future__ import annotations

import builtins
import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from tempo.core.errors import IndexExprError, user_site

Number: TypeAlias = int | float
IntLike: TypeAlias = "IntIndexValue | int"
BoolLike: TypeAlias = "BooleanIndexValue | bool"


class NonAffineIndexExprError(IndexExprError):
    """An expression that isl cannot represent (a product of symbols, a true division...)."""


class IndexExprZeroDivisionError(IndexExprError, ZeroDivisionError):
    """A floor division or modulo by the constant zero."""


# ----------------------------------------------------------------------------- base classes


class IndexExpr:
    """Base of every index expression node: structural hashing, traversal and rewriting.
    Subclasses are frozen dataclasses whose node-valued fields are listed by `children`."""

    def children(self) -> tuple[IndexExpr, ...]:
        """The direct sub-expressions, in field order."""
        return ()

    def _rebuild(self, children: Sequence[IndexExpr]) -> IndexExpr:
        """A node of the same kind over new children, built with the simplifying operators."""
        return self

    def _key(self) -> tuple[Any, ...]:
        """The structural identity: node kind, scalar fields and children keys."""
        return (type(self).__name__, *(c._key() for c in self.children()))

    @functools.cached_property
    def _hash(self) -> int:
        return hash(self._key())

    def __hash__(self) -> int:
        return self._hash

    # --- structure ------------------------------------------------------------------------

    def struct_eq(self, other: object) -> bool:
        """True when `other` is the same tree (symbols compare by name)."""
        if self is other:
            return True
        if not isinstance(other, IndexExpr):
            try:
                other = lift_to_ie(other)  # type: ignore[arg-type]
            except IndexExprError:
                return False
        return self._hash == other._hash and self._key() == other._key()

    def logical_eq(self, other: object) -> bool:
        """True when both expressions take the same value at every integer point.
        Uses isl for quasi-affine expressions, sympy otherwise (see `index_isl`)."""
        from tempo.core.index_isl import logical_eq_pair

        return logical_eq_pair(self, lift_to_ie(other))  # type: ignore[arg-type]

    def symbols_used(self) -> set[Symbol]:
        """Every symbol in the tree, variables and bounds."""
        out: set[Symbol] = set()
        stack: list[IndexExpr] = [self]
        while stack:
            e = stack.pop()
            if isinstance(e, Symbol):
                out.add(e)
            stack.extend(e.children())
        return out

    def vars_used(self) -> set[Symbol]:
        """The non-bound symbols (loop variables) in the tree."""
        return {s for s in self.symbols_used() if not s.is_bound}

    def bound_symbols_used(self) -> set[Symbol]:
        """The bound symbols (upper-case twins) in the tree."""
        return {s for s in self.symbols_used() if s.is_bound}

    def accesses_bound(self) -> bool:
        """True when a bound symbol appears anywhere in the tree."""
        return bool(self.bound_symbols_used())

    def is_constant(self) -> bool:
        """True when no loop variable appears (bound symbols count as constants)."""
        return not self.vars_used()

    def is_point(self) -> bool:
        """True unless the expression contains a slice."""
        return True

    # --- evaluation -----------------------------------------------------------------------

    def evaluate(self, values: Mapping[Symbol, int]) -> Any:
        """The value at `values` (missing symbols raise KeyError)."""
        raise NotImplementedError

    def try_eval(self, values: Mapping[Symbol, int] | None = None) -> Any:
        """The value at `values`, or None when some symbol has no value."""
        try:
            return self.evaluate(values or {})
        except KeyError:
            return None

    def remap(self, mapping: Mapping[Symbol, IndexExpr | int]) -> IndexExpr:
        """Substitute symbols by expressions, then fold with the light simplifications."""
        if not mapping:
            return self
        lifted = {k: lift_to_ie(v) for k, v in mapping.items()}
        return self._remap(lifted)

    def _remap(self, mapping: Mapping[Symbol, IndexExpr]) -> IndexExpr:
        kids = self.children()
        if not kids:
            return self
        return self._rebuild([c._remap(mapping) for c in kids])

    def partial_eval(self, values: Mapping[Symbol, int]) -> IndexExpr:
        """Substitute the symbols that have a value and fold constants."""
        return self.remap({k: v for k, v in values.items()})

    def simplify(self) -> IndexExpr:
        """An equivalent, usually smaller tree: children simplified, linear terms collected."""
        kids = self.children()
        if not kids:
            return self
        return self._rebuild([c.simplify() for c in kids])

    def evaluate_shape(self, values: Mapping[Symbol, int]) -> tuple[int, ...]:
        """The leading spatial dims this access adds: a slice adds `stop-start`, a point none."""
        return ()

    def enumerate_all_cond_branches(self) -> list[tuple[BooleanIndexValue | None, IndexExpr]]:
        """Every `Piecewise` expanded: `(cond, expr)` alternatives with disjoint conditions.
        `cond` is None when the expression has no piecewise part."""
        kids = self.children()
        if not kids:
            return [(None, self)]
        combos: list[tuple[BooleanIndexValue | None, list[IndexExpr]]] = [(None, [])]
        for c in kids:
            new: list[tuple[BooleanIndexValue | None, list[IndexExpr]]] = []
            for cond, built in combos:
                for ccond, cexpr in c.enumerate_all_cond_branches():
                    new.append((_and_opt(cond, ccond), [*built, cexpr]))
            combos = new
        return [(cond, self._rebuild(built)) for cond, built in combos]

    def as_upper_bound_access(self) -> IndexExpr:
        """Every variable `v` replaced by its largest value `V-1` (its bound minus one)."""
        return self.remap({v: v.as_bound() - 1 for v in self.vars_used()})

    def as_lower_bound_access(self) -> IndexExpr:
        """Every variable replaced by its smallest value 0 (all lower bounds are 0)."""
        return self.remap({v: 0 for v in self.vars_used()})

    # --- code generation ------------------------------------------------------------------

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        """A Python expression computing this value over local variables.
        `names` maps a symbol name to the Python identifier holding it (default: the name)."""
        raise NotImplementedError

    def to_isl(self) -> str:
        """isl syntax for this expression (quasi-affine only; raises NonAffineIndexExprError)."""
        raise NonAffineIndexExprError(f"isl cannot represent the index expression {self}")

    def __repr__(self) -> str:
        return str(self)


def _and_opt(a: BooleanIndexValue | None, b: BooleanIndexValue | None) -> BooleanIndexValue | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


class IndexAtom(IndexExpr):
    """One member of an index sequence: a value or a slice."""


class IndexValue(IndexAtom):
    """A scalar-valued expression (integer or boolean)."""


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

    def __eq__(self, o: object) -> BooleanIndexValue:  # type: ignore[override]
        if not isinstance(o, (int, IntIndexValue)):
            return NotImplemented
        return self.symb_eq(o)

    def __ne__(self, o: object) -> BooleanIndexValue:  # type: ignore[override]
        if not isinstance(o, (int, IntIndexValue)):
            return NotImplemented
        return self.symb_ne(o)

    def __hash__(self) -> int:
        return self._hash

    def __int__(self) -> int:
        v = self.try_eval()
        if v is None:
            raise IndexExprError(f"{self} is symbolic and has no int value", site=user_site())
        return int(v)

    def evaluate_int(self, values: Mapping[Symbol, int]) -> int:
        """The value at `values` as a Python int."""
        return int(self.evaluate(values))

    def simplify(self) -> IndexExpr:
        """Children simplified, then linear terms collected (`t + T - t` → `T`) and constant
        factors divided out of `//` and `%` by constants."""
        e = super().simplify()
        if isinstance(e, (Add, Sub, Neg, Mul)):
            return _from_linear(*_linear(e))  # type: ignore[arg-type]
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
        return Symbol(self.name.upper(), True, self.idx + 1 if self.idx >= 0 else -1)

    def as_var(self) -> Symbol:
        """The lower-case variable twin (`T` → `t`)."""
        if not self.is_bound:
            return self
        return Symbol(self.name.lower(), False, self.idx - 1 if self.idx >= 1 else -1)

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

    def _fn(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

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
        return _add(c[0], c[1])  # type: ignore[arg-type]

    def to_isl(self) -> str:
        return f"({self.left_operand.to_isl()} + {self.right_operand.to_isl()})"


class Sub(_IntBinary):
    """`left - right`."""

    OP = "-"

    def _fn(self, a: Any, b: Any) -> Any:
        return a - b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _sub(c[0], c[1])  # type: ignore[arg-type]

    def to_isl(self) -> str:
        return f"({self.left_operand.to_isl()} - {self.right_operand.to_isl()})"


class Mul(_IntBinary):
    """`left * right` (isl needs one side to be an integer constant)."""

    OP = "*"

    def _fn(self, a: Any, b: Any) -> Any:
        return a * b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _mul(c[0], c[1])  # type: ignore[arg-type]

    def to_isl(self) -> str:
        a, b = self.left_operand, self.right_operand
        for c, x in ((a, b), (b, a)):
            v = _const_int(c)
            if v is not None:
                return f"({v} * {x.to_isl()})"
        raise NonAffineIndexExprError(f"isl cannot represent the product of symbols {self}")


class FloorDivision(_IntBinary):
    """`left // right`, rounding towards minus infinity as Python and isl do."""

    OP = "//"

    def _fn(self, a: Any, b: Any) -> Any:
        if b == 0:
            raise IndexExprZeroDivisionError(f"division by zero in {self}")
        return a // b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _floordiv(c[0], c[1])  # type: ignore[arg-type]

    def to_isl(self) -> str:
        d = _const_int(self.right_operand)
        if d is None or d == 0:
            raise NonAffineIndexExprError(f"isl needs a constant nonzero divisor in {self}")
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
        return _mod(c[0], c[1])  # type: ignore[arg-type]

    def to_isl(self) -> str:
        d = _const_int(self.right_operand)
        if d is None or d == 0:
            raise NonAffineIndexExprError(f"isl needs a constant nonzero modulus in {self}")
        a = self.left_operand.to_isl()
        return f"(({a}) mod {d})" if d > 0 else f"(({a}) + {-d} * floor((-({a}))/{-d}))"


class Pow(_IntBinary):
    """`left ** right`."""

    OP = "**"

    def _fn(self, a: Any, b: Any) -> Any:
        return a**b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _pow(c[0], c[1])  # type: ignore[arg-type]


class TrueDivision(_IntBinary):
    """`left / right` with a float result (only `Ceil`/`Floor` of it reach isl)."""

    OP = "/"

    def _fn(self, a: Any, b: Any) -> Any:
        if b == 0:
            raise IndexExprZeroDivisionError(f"division by zero in {self}")
        return a / b

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
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
        return _neg(c[0])  # type: ignore[arg-type]

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
        return ceil(c[0])  # type: ignore[arg-type]

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
        return floor(c[0])  # type: ignore[arg-type]

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
        return min(*c)  # type: ignore[arg-type]


class Max(_MinMax):
    """The largest of `operands`."""

    FN = staticmethod(builtins.max)
    NAME = "max"

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return max(*c)  # type: ignore[arg-type]


@dataclass(frozen=True, eq=False, repr=False)
class Piecewise(IntIndexValue):
    """`(cond, value)` pairs; the value of the first pair whose condition holds.
    Evaluating where no condition holds raises IndexExprError."""

    conds_and_branches: tuple[tuple[BooleanIndexValue, IntIndexValue], ...]

    def children(self) -> tuple[IndexExpr, ...]:
        return tuple(x for pair in self.conds_and_branches for x in pair)

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
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
                flat = [_and_opt(c, e) for c, e in alts]  # type: ignore[arg-type]
                cond = functools.reduce(_or, flat)  # type: ignore[arg-type,assignment]
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
            f"isl has no expression syntax for {self}; use index_isl.isl_pieces for its branches"
        )

    def to_py_literal(self) -> str:
        """A short description used in the error of generated code."""
        return str(self)

    def __str__(self) -> str:
        inner = ", ".join(f"({c}, {v})" for c, v in self.conds_and_branches)
        return f"piecewise({inner})"


def _tempo_no_branch(desc: str) -> int:
    """Raised by generated code when no piecewise branch holds."""
    raise IndexExprError(f"no branch of {desc} holds")


PY_GLOBALS: dict[str, Any] = {"math": math, "_tempo_no_branch": _tempo_no_branch}
"""The globals `to_py` sources need (`math`, `_tempo_no_branch`); pass to `eval`/`exec`."""


# ----------------------------------------------------------------------------- booleans


class BooleanIndexValue(IndexValue):
    """A boolean condition over symbols; `&`, `|`, `~` build simplified nodes.
    Using a symbolic condition as a Python bool raises (except Equal / Not(Equal))."""

    def __and__(self, o: BoolLike) -> BooleanIndexValue:
        return _and(self, lift_to_bool_ie(o))

    def __rand__(self, o: BoolLike) -> BooleanIndexValue:
        return _and(lift_to_bool_ie(o), self)

    def __or__(self, o: BoolLike) -> BooleanIndexValue:
        return _or(self, lift_to_bool_ie(o))

    def __ror__(self, o: BoolLike) -> BooleanIndexValue:
        return _or(lift_to_bool_ie(o), self)

    def __invert__(self) -> BooleanIndexValue:
        return _not(self)

    def __eq__(self, o: object) -> bool:
        return isinstance(o, IndexExpr) and self.struct_eq(o)

    def __ne__(self, o: object) -> bool:
        return not self.__eq__(o)

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        raise IndexExprError(
            f"the symbolic condition {self} has no Python truth value", site=user_site()
        )


@dataclass(frozen=True, eq=False, repr=False)
class ConstBool(BooleanIndexValue):
    """A boolean constant."""

    const: bool

    def _key(self) -> tuple[Any, ...]:
        return ("ConstBool", self.const)

    def evaluate(self, values: Mapping[Symbol, int]) -> bool:
        return self.const

    def __bool__(self) -> bool:
        return self.const

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        return repr(self.const)

    def to_isl(self) -> str:
        return "true" if self.const else "false"

    def __str__(self) -> str:
        return str(self.const)


@dataclass(frozen=True, eq=False, repr=False)
class _Compare(BooleanIndexValue):
    left_operand: IntIndexValue
    right_operand: IntIndexValue

    PY = "?"
    ISL = "?"

    def children(self) -> tuple[IndexExpr, ...]:
        return (self.left_operand, self.right_operand)

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _cmp(type(self), c[0], c[1])  # type: ignore[arg-type]

    def evaluate(self, values: Mapping[Symbol, int]) -> bool:
        return bool(
            _CMP_FN[type(self)](
                self.left_operand.evaluate(values), self.right_operand.evaluate(values)
            )
        )

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        return f"({self.left_operand.to_py(names)} {self.PY} {self.right_operand.to_py(names)})"

    def to_isl(self) -> str:
        if _has_piecewise(self):  # a disjunction over the piecewise branches
            alts = [
                f"({c.to_isl()} and {e.to_isl()})" if c is not None else e.to_isl()
                for c, e in self.enumerate_all_cond_branches()
            ]
            return "(" + " or ".join(alts) + ")" if alts else "false"
        return f"({self.left_operand.to_isl()} {self.ISL} {self.right_operand.to_isl()})"

    def __str__(self) -> str:
        return f"({self.left_operand} {self.PY} {self.right_operand})"


class Equal(_Compare):
    """`left == right`; as a Python bool it means structural equality of the two sides."""

    PY = "=="
    ISL = "="

    def __bool__(self) -> bool:
        return self.left_operand.struct_eq(self.right_operand)


class LessThan(_Compare):
    """`left < right`."""

    PY = "<"
    ISL = "<"


class LessThanOrEqual(_Compare):
    """`left <= right`."""

    PY = "<="
    ISL = "<="


class GreaterThan(_Compare):
    """`left > right`."""

    PY = ">"
    ISL = ">"


class GreaterThanOrEqual(_Compare):
    """`left >= right`."""

    PY = ">="
    ISL = ">="


_CMP_FN: dict[type, Callable[[Any, Any], bool]] = {
    Equal: lambda a, b: a == b,
    LessThan: lambda a, b: a < b,
    LessThanOrEqual: lambda a, b: a <= b,
    GreaterThan: lambda a, b: a > b,
    GreaterThanOrEqual: lambda a, b: a >= b,
}
_CMP_NEG: dict[type, type] = {
    LessThan: GreaterThanOrEqual,
    LessThanOrEqual: GreaterThan,
    GreaterThan: LessThanOrEqual,
    GreaterThanOrEqual: LessThan,
}


@dataclass(frozen=True, eq=False, repr=False)
class _BoolNary(BooleanIndexValue):
    operands: tuple[BooleanIndexValue, ...]

    PY = "?"

    def children(self) -> tuple[IndexExpr, ...]:
        return self.operands

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        return "(" + f" {self.PY} ".join(o.to_py(names) for o in self.operands) + ")"

    def to_isl(self) -> str:
        return "(" + f" {self.PY} ".join(o.to_isl() for o in self.operands) + ")"

    def __str__(self) -> str:
        sym = "&" if self.PY == "and" else "|"
        return "(" + f" {sym} ".join(str(o) for o in self.operands) + ")"


class And(_BoolNary):
    """All `operands` hold."""

    PY = "and"

    def evaluate(self, values: Mapping[Symbol, int]) -> bool:
        return all(o.evaluate(values) for o in self.operands)

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return functools.reduce(_and, c)  # type: ignore[arg-type]


class Or(_BoolNary):
    """Some of `operands` holds."""

    PY = "or"

    def evaluate(self, values: Mapping[Symbol, int]) -> bool:
        return any(o.evaluate(values) for o in self.operands)

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return functools.reduce(_or, c)  # type: ignore[arg-type]


@dataclass(frozen=True, eq=False, repr=False)
class Not(BooleanIndexValue):
    """`not operand`; `Not(Equal)` as a Python bool means structural inequality."""

    operand: BooleanIndexValue

    def children(self) -> tuple[IndexExpr, ...]:
        return (self.operand,)

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _not(c[0])  # type: ignore[arg-type]

    def evaluate(self, values: Mapping[Symbol, int]) -> bool:
        return not self.operand.evaluate(values)

    def __bool__(self) -> bool:
        if isinstance(self.operand, Equal):
            return not bool(self.operand)
        return super().__bool__()

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        return f"(not {self.operand.to_py(names)})"

    def to_isl(self) -> str:
        o = self.operand
        if isinstance(o, Equal):
            return f"({o.left_operand.to_isl()} != {o.right_operand.to_isl()})"
        return f"(not {o.to_isl()})"

    def __str__(self) -> str:
        o = self.operand
        if isinstance(o, Equal):
            return f"({o.left_operand} != {o.right_operand})"
        return f"~{o}"


# ----------------------------------------------------------------------------- slices, sequences


@dataclass(frozen=True, eq=False, repr=False)
class Slice(IndexAtom):
    """The half-open range `start:stop` (step 1); reading it adds a leading spatial dim."""

    start: IntIndexValue
    stop: IntIndexValue

    def children(self) -> tuple[IndexExpr, ...]:
        return (self.start, self.stop)

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        # Substitution keeps a slice a slice (collapsing is only done by `slice_`).
        return Slice(c[0], c[1])  # type: ignore[arg-type]

    def __eq__(self, o: object) -> bool:
        return isinstance(o, IndexExpr) and self.struct_eq(o)

    def __hash__(self) -> int:
        return self._hash

    def is_point(self) -> bool:
        return False

    def is_growing_slice(self) -> bool:
        """`0:e` with a symbolic stop (a prefix that grows with the variables)."""
        return _const_int(self.start) == 0 and not self.stop.is_constant()

    def is_shrinking_slice(self) -> bool:
        """`e:B` with a symbolic start and a constant (bound-only) stop."""
        return not self.start.is_constant() and self.stop.is_constant()

    def evaluate(self, values: Mapping[Symbol, int]) -> slice:
        return slice(self.start.evaluate(values), self.stop.evaluate(values))

    def evaluate_shape(self, values: Mapping[Symbol, int]) -> tuple[int, ...]:
        return (int(self.stop.evaluate(values) - self.start.evaluate(values)),)

    def length(self) -> IntIndexValue:
        """The symbolic size `stop - start`."""
        return self.stop - self.start

    def bounds_py(self, names: Mapping[str, str] | None = None) -> tuple[str, str]:
        """Python sources of `(start, stop)`."""
        return self.start.to_py(names), self.stop.to_py(names)

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        s, e = self.bounds_py(names)
        return f"slice({s}, {e})"

    def __str__(self) -> str:
        return f"{self.start}:{self.stop}"


@dataclass(frozen=True, eq=False, repr=False)
class IndexSequence(IndexExpr):
    """A tuple of atoms indexing each domain dimension of a tensor."""

    members: tuple[IndexAtom, ...]

    def children(self) -> tuple[IndexExpr, ...]:
        return self.members

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return IndexSequence(tuple(c))  # type: ignore[arg-type]

    def __eq__(self, o: object) -> bool:
        return isinstance(o, IndexExpr) and self.struct_eq(o)

    def __hash__(self) -> int:
        return self._hash

    def __len__(self) -> int:
        return len(self.members)

    def __iter__(self) -> Iterator[IndexAtom]:
        return iter(self.members)

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return IndexSequence(self.members[i])
        return self.members[i]

    def replace_idx(self, i: int, atom: IndexAtom | int) -> IndexSequence:
        """A copy with member `i` replaced."""
        m = list(self.members)
        m[i] = lift_to_ie_atom(atom)
        return IndexSequence(tuple(m))

    def skip_idx(self, i: int) -> IndexSequence:
        """A copy without member `i`."""
        return IndexSequence(self.members[:i] + self.members[i + 1 :])

    def prepend_member(self, atom: IndexAtom | int) -> IndexSequence:
        """A copy with `atom` first."""
        return IndexSequence((lift_to_ie_atom(atom), *self.members))

    def append_member(self, atom: IndexAtom | int) -> IndexSequence:
        """A copy with `atom` last."""
        return IndexSequence((*self.members, lift_to_ie_atom(atom)))

    def num_slices(self) -> int:
        """How many members are slices."""
        return sum(isinstance(m, Slice) for m in self.members)

    def is_point(self) -> bool:
        return self.num_slices() == 0

    def is_basis(self) -> bool:
        """True when every member is a plain loop variable."""
        return all(isinstance(m, Symbol) and not m.is_bound for m in self.members)

    def evaluate(self, values: Mapping[Symbol, int]) -> tuple[Any, ...]:
        return tuple(m.evaluate(values) for m in self.members)

    def evaluate_shape(self, values: Mapping[Symbol, int]) -> tuple[int, ...]:
        return tuple(d for m in self.members for d in m.evaluate_shape(values))

    def members_py(self, names: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """Python sources of each member (a slice member gives `slice(start, stop)`)."""
        return tuple(m.to_py(names) for m in self.members)

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        return "(" + "".join(f"{s}, " for s in self.members_py(names)) + ")"

    def __str__(self) -> str:
        return "[" + ", ".join(str(m) for m in self.members) + "]"


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
    if isinstance(e, Neg) or (isinstance(e, Mul) and _const_int(e.left_operand) is not None):
        f = -1 if isinstance(e, Neg) else e.left_operand.const  # type: ignore[attr-defined]
        inner = e.operand if isinstance(e, Neg) else e.right_operand  # type: ignore[attr-defined]
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
    return kind(a, b)  # type: ignore[no-any-return]


def _flat(kind: type, e: BooleanIndexValue) -> tuple[BooleanIndexValue, ...]:
    return e.operands if isinstance(e, kind) else (e,)  # type: ignore[attr-defined]


def _and(a: BooleanIndexValue, b: BooleanIndexValue) -> BooleanIndexValue:
    return _junction(And, Or, a, b)


def _or(a: BooleanIndexValue, b: BooleanIndexValue) -> BooleanIndexValue:
    return _junction(Or, And, a, b)


def _junction(
    kind: type, dual: type, a: BooleanIndexValue, b: BooleanIndexValue
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
            and any(any(p.struct_eq(q) for q in o.operands) for p in ops if p is not o)  # type: ignore[attr-defined]
        )
    ]
    if not kept:
        return ConstBool(unit)
    if len(kept) == 1:
        return kept[0]
    return kind(tuple(kept))  # type: ignore[no-any-return]


def _not(a: BooleanIndexValue) -> BooleanIndexValue:
    if isinstance(a, ConstBool):
        return ConstBool(not a.const)
    if isinstance(a, Not):
        return a.operand
    if type(a) in _CMP_NEG:
        return _CMP_NEG[type(a)](a.left_operand, a.right_operand)  # type: ignore[attr-defined,no-any-return]
    return Not(a)


# ----------------------------------------------------------------------------- module functions


def min(a: Any, b: Any = None, *rest: Any) -> IntIndexValue:  # noqa: A001
    """`Min` of the arguments (one argument → the argument lifted; constants folded)."""
    return _minmax(Min, builtins.min, a, b, rest)


def max(a: Any, b: Any = None, *rest: Any) -> IntIndexValue:  # noqa: A001
    """`Max` of the arguments (one argument → the argument lifted; constants folded)."""
    return _minmax(Max, builtins.max, a, b, rest)


def _minmax(kind: type, fn: Callable[..., Any], a: Any, b: Any, rest: tuple[Any, ...]) -> Any:
    args = [a] if b is None else [a, b, *rest]
    if b is None and isinstance(a, (list, tuple)):
        args = list(a)
    ops: list[IntIndexValue] = []
    consts: list[Number] = []
    for x in args:
        e = lift_to_int_ie(x)
        for o in e.operands if isinstance(e, kind) else (e,):  # type: ignore[attr-defined]
            if isinstance(o, ConstInt):
                consts.append(o.const)
            elif not any(o.struct_eq(p) for p in ops):
                ops.append(o)
    if consts:
        ops.append(ConstInt(fn(consts)))
    if len(ops) == 1:
        return ops[0]
    return kind(tuple(ops))


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
    return IndexSequence((e,))  # type: ignore[arg-type]


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
    return eval(compile(src, f"<index_expr {e}>", "eval"), dict(PY_GLOBALS))  # type: ignore[no-any-return]


from tempo.core.index_isl import (  # noqa: E402  (isl bridge re-exported, see module doc)
    from_isl_aff,
    from_isl_ast_expr,
    from_isl_pw_aff,
    isl_constraint_str,
    isl_pieces,
    to_sympy,
)

__all__ = [
    "Add",
    "And",
    "BooleanIndexValue",
    "Ceil",
    "ConstBool",
    "ConstFloat",
    "ConstInt",
    "Equal",
    "Floor",
    "FloorDivision",
    "GreaterThan",
    "GreaterThanOrEqual",
    "IndexAtom",
    "IndexExpr",
    "IndexExprZeroDivisionError",
    "IndexSequence",
    "IndexValue",
    "IntIndexValue",
    "LessThan",
    "LessThanOrEqual",
    "Max",
    "Min",
    "Modulos",
    "Mul",
    "Neg",
    "NonAffineIndexExprError",
    "Not",
    "Or",
    "PY_GLOBALS",
    "Piecewise",
    "Pow",
    "Slice",
    "Sub",
    "Symbol",
    "TrueDivision",
    "bound_symbols",
    "ceil",
    "compile_py",
    "evaluate",
    "evaluate_int",
    "floor",
    "from_isl_aff",
    "from_isl_ast_expr",
    "from_isl_pw_aff",
    "isl_constraint_str",
    "isl_pieces",
    "lift_to_bool_ie",
    "lift_to_ie",
    "lift_to_ie_atom",
    "lift_to_ie_seq",
    "lift_to_int_ie",
    "logical_eq",
    "max",
    "min",
    "piecewise",
    "slice_",
    "struct_eq",
    "symbols",
    "to_sympy",
]
