"""Boolean index expression nodes: constants, comparisons, `And`/`Or`/`Not`; `&`, `|`, `~`
build simplified nodes through the smart constructors of `simplify`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tempo.core.errors import IndexExprError, user_site
from tempo.core.index_expr.base import BoolLike, IndexExpr, IndexValue, nary_operands

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
            f"the symbolic condition {self} has no Python truth value at record time: Python's "
            "`if`, `and`/`or` and `max`/`min` cannot decide it. Use `ie.max`/`ie.min` (also "
            "`tempo.api.max`/`min`) in index expressions, and `ctx.when(cond)` or "
            "`x[cond] = ...` for conditional definitions", site=user_site()
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
        # ignore: own children (see IndexExpr._rebuild)
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

    def __init__(self, *operands: Any, **kw: Any) -> None:
        """`And(a, b, ...)` as programs write it, or `And((a, b, ...))` (one sequence)."""
        object.__setattr__(self, "operands", nary_operands(self, operands, kw, lift_to_bool_ie))

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
        # ignore: own children (see IndexExpr._rebuild)
        return functools.reduce(_and, c)  # type: ignore[arg-type]


class Or(_BoolNary):
    """Some of `operands` holds."""

    PY = "or"

    def evaluate(self, values: Mapping[Symbol, int]) -> bool:
        return any(o.evaluate(values) for o in self.operands)

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        # ignore: own children (see IndexExpr._rebuild)
        return functools.reduce(_or, c)  # type: ignore[arg-type]


@dataclass(frozen=True, eq=False, repr=False)
class Not(BooleanIndexValue):
    """`not operand`; `Not(Equal)` as a Python bool means structural inequality."""

    operand: BooleanIndexValue

    def children(self) -> tuple[IndexExpr, ...]:
        return (self.operand,)

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        return _not(c[0])  # type: ignore[arg-type]  # own children (see IndexExpr._rebuild)

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


# Call-time dependencies, imported last to close the node <-> constructor cycle (see __init__).
from tempo.core.index_expr.functions import lift_to_bool_ie  # noqa: E402
from tempo.core.index_expr.int_nodes import IntIndexValue, Symbol  # noqa: E402
from tempo.core.index_expr.simplify import _and, _cmp, _has_piecewise, _not, _or  # noqa: E402
