"""Index expression base classes: `IndexExpr` (hashing, traversal, rewriting), `IndexAtom`,
`IndexValue`, and the index expression errors."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from tempo.core.errors import IndexExprError

Number: TypeAlias = int | float
IntLike: TypeAlias = "IntIndexValue | int"
BoolLike: TypeAlias = "BooleanIndexValue | bool"


class NonAffineIndexExprError(IndexExprError):
    """An expression that isl cannot represent (a product of symbols, a true division...)."""


class IndexExprZeroDivisionError(IndexExprError, ZeroDivisionError):
    """A floor division or modulo by the constant zero."""


# ----------------------------------------------------------------------------- base classes


class IndexExpr(ABC):
    """Base of every index expression node: structural hashing, traversal and rewriting.
    Subclasses are frozen dataclasses whose node-valued fields are listed by `children`."""

    def children(self) -> tuple[IndexExpr, ...]:
        """The direct sub-expressions, in field order."""
        return ()

    def _rebuild(self, children: Sequence[IndexExpr]) -> IndexExpr:
        """A node of the same kind over new children, built with the simplifying operators.
        The children are this node's own, rewritten, so they have the kinds its fields
        declare; `children()` types them loosely, hence the ignores in the overrides."""
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
                other = lift_to_ie(other)
            except IndexExprError:
                return False
        return self._hash == other._hash and self._key() == other._key()

    def logical_eq(self, other: object) -> bool:
        """True when both expressions take the same value at every integer point.
        Uses isl for quasi-affine expressions, sympy otherwise (see `isl_bridge`)."""
        from tempo.core.index_expr.isl_bridge import logical_eq_pair

        return logical_eq_pair(self, lift_to_ie(other))

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

    @abstractmethod
    def evaluate(self, values: Mapping[Symbol, int]) -> Any:
        """The value at `values` (missing symbols raise KeyError)."""

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

    @abstractmethod
    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        """A Python expression computing this value over local variables.
        `names` maps a symbol name to the Python identifier holding it (default: the name)."""

    def to_isl(self) -> str:
        """isl syntax for this expression (quasi-affine only; raises NonAffineIndexExprError)."""
        raise NonAffineIndexExprError(f"{self} is not an affine integer expression")

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


def nary_operands(node: object, args: tuple[Any, ...], kw: dict[str, Any],
                  lift: Callable[[Any], Any]) -> tuple[Any, ...]:
    """The operands of an n-ary node written `Node(a, b, ...)`, `Node((a, b, ...))` or
    `Node(operands=...)` (programs use all three), each lifted to an index expression."""
    ops = kw.pop("operands", args)
    if kw:
        raise TypeError(f"{type(node).__name__}() got unexpected arguments {sorted(kw)}")
    if len(ops) == 1 and isinstance(ops[0], tuple | list):
        ops = ops[0]
    return tuple(lift(o) for o in ops)


# Call-time dependencies, imported last to close the node <-> constructor cycle (see __init__).
from tempo.core.index_expr.bool_nodes import BooleanIndexValue  # noqa: E402
from tempo.core.index_expr.functions import lift_to_ie  # noqa: E402
from tempo.core.index_expr.int_nodes import IntIndexValue, Symbol  # noqa: E402

