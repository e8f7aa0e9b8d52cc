"""Three-valued evaluation of schedule conditions for compiled loops: a condition inside an
inner loop may name an enclosing loop's counter (`(d0 == 2) and (d1 == 15)`), unknown when
the inner loop is planned. Evaluated with such names UNKNOWN, it is still decided where the
inner counter alone decides it (`d1 != 15` makes it False); elsewhere it is UNKNOWN and
those iterations stay a Python loop, which tests the condition at run time."""

from __future__ import annotations

import ast
import builtins
from typing import Any

_BUILTINS = frozenset(dir(builtins))


class _Unknown:
    """A value that depends on a counter not known yet: every operation on it is unknown."""

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        raise TypeError("an unknown value has no truth")

    def _any(self, *_: Any) -> _Unknown:
        return self

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _any  # type: ignore[assignment]  # unknown, not bool
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _any
    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = _any
    __mod__ = __rmod__ = __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = _any
    __floor__ = __ceil__ = __trunc__ = __round__ = _any

    def __hash__(self) -> int:
        return 0


UNKNOWN = _Unknown()


def _and3(*vs: Any) -> Any:
    if any(v is not UNKNOWN and not v for v in vs):
        return False
    return UNKNOWN if any(v is UNKNOWN for v in vs) else True


def _or3(*vs: Any) -> Any:
    if any(v is not UNKNOWN and v for v in vs):
        return True
    return UNKNOWN if any(v is UNKNOWN for v in vs) else False


def _not3(v: Any) -> Any:
    return UNKNOWN if v is UNKNOWN else not v


def _if3(test: Any, then: Any, other: Any) -> Any:
    if test is UNKNOWN:
        return then if then is not UNKNOWN and then == other else UNKNOWN
    return then if test else other


HELPERS = {"_and3": _and3, "_or3": _or3, "_not3": _not3, "_if3": _if3}


class _ThreeValued(ast.NodeTransformer):
    """`and`, `or`, `not` and `x if c else y` as calls of the three-valued helpers."""

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        fn = "_and3" if isinstance(node.op, ast.And) else "_or3"
        return ast.Call(ast.Name(fn, ast.Load()), node.values, [])

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.Call(ast.Name("_not3", ast.Load()), [node.operand], [])
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        return ast.Call(ast.Name("_if3", ast.Load()), [node.test, node.body, node.orelse], [])


def compile3(src: str) -> Any:
    """`src` compiled for three-valued evaluation (names bound to UNKNOWN stay unknown)."""
    tree = _ThreeValued().visit(ast.parse(src, mode="eval"))
    return compile(ast.fix_missing_locations(tree), "<tempo-loop-cond>", "eval")


def evaluate3(code: Any, env: dict[str, Any], known: dict[str, Any]) -> Any:
    """True, False or UNKNOWN; names neither in `env` nor `known` (nor builtins such as
    `min`) are unknown."""
    scope = {n: UNKNOWN for n in code.co_names
             if n not in env and n not in HELPERS and n not in _BUILTINS}
    scope.update(known)
    try:
        v = eval(code, {**env, **HELPERS}, scope)  # noqa: S307 - our own source
    except TypeError:  # an unknown reached something that needs a value
        return UNKNOWN
    return v if v is UNKNOWN else bool(v)
