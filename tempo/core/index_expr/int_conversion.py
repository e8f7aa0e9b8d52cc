"""What Python gets when it asks an integer index expression for an int (`int(e)`,
`range(e)`, a list index, a shape): the value of a constant expression, or an error at the
user's line for a symbolic one, whose value only comes with the bounds given to compile;
and the error generated Python code raises when no piecewise branch holds."""

from __future__ import annotations

from typing import Any

from tempo.core.errors import IndexExprError, SymbolicIntError, user_site


def to_int(e: Any) -> int:
    """`int(e)`: its value, or IndexExprError when `e` is symbolic."""
    v = e.try_eval()
    if v is None:
        raise IndexExprError(f"{e} is symbolic and has no int value", site=user_site())
    return int(v)


def to_index(e: Any) -> int:
    """`operator.index(e)` (`range(T)`, `xs[e]`): its value, or SymbolicIntError, which
    says how to loop in the program instead."""
    v = e.try_eval()
    if v is None or isinstance(v, bool):
        whole = f"x[0:{e}]" if getattr(e, "is_bound", False) else "x[0:T]"
        raise SymbolicIntError(
            f"`{e}` is symbolic (its value comes with the bounds given to compile), so "
            f"Python cannot use it as an int here (range, a list index, a shape). Loop in "
            f"the program instead: read a point with the variable (`x[t]`) or all of them "
            f"with a slice (`{whole}`); for a Python loop, use the number you pass to "
            f"compile", site=user_site())
    return int(v)


def _tempo_no_branch(desc: str) -> int:
    """Raised by generated code when no piecewise branch holds."""
    raise IndexExprError(f"no branch of {desc} holds")
