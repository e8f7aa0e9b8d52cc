"""The names a user gives a context's dimensions in their own code.

`TempoContext(cfg, num_dims=2)` makes dimensions `d0, d1`; programs name them locally,
`(b, B), (t, T) = ctx.variables_and_bounds` (API.md §1). Errors and schedules should say
`t` and `T`, so the statement that first takes the symbols is read (its AST) for the
names it binds. Only plain unpackings are understood; anything else keeps the defaults in
the symbols (and schedules), and errors find the user's names when they are read
(tempo/api/error_names).
"""

from __future__ import annotations

import ast
import linecache
import os
import re
from types import FrameType

_TEMPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Names the generated code binds next to the loop counters (kernels k3, stores s3_0 and
# their w/p/b/v twins, helpers): a dimension named so would shadow them at run time.
_GENERATED = re.compile(r"^[a-z]{1,3}\d+(_\d+)?$")
_HELPERS = frozenset({"stack", "ended", "undefined", "read_slices", "fetch_slices", "mem_tick",
                      "run", "math", "np", "ends", "exhausted", "step", "region", "key"})

Pair = tuple[str | None, str | None]


def caller_frame() -> FrameType | None:
    """The innermost frame outside the tempo package (the user's code), or None."""
    import sys

    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(_TEMPO_ROOT + os.sep):
            return frame
        frame = frame.f_back
    return None


def bound_names(frame: FrameType, member: str, count: int) -> list[Pair] | None:
    """Per dimension, the (variable, bound) names the statement running in `frame` binds
    from `<ctx>.<member>` (`variables_and_bounds`, `variables` or `upper_bounds`), None
    for a name it does not bind; None when the statement is not such an unpacking."""
    stmt = _statement(frame)
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    value, index = stmt.value, None
    if isinstance(value, ast.Subscript):
        key = value.slice
        if not (isinstance(key, ast.Constant) and isinstance(key.value, int)):
            return None
        value, index = value.value, key.value
    if not (isinstance(value, ast.Attribute) and value.attr == member):
        return None
    target = stmt.targets[0]
    if index is not None:  # one dimension: `t, T = ctx.variables_and_bounds[1]`
        if not -count <= index < count:
            return None
        one = _one(target, member)
        if one is None:
            return None
        out: list[Pair] = [(None, None)] * count
        out[index % count] = one
        return out
    if not isinstance(target, (ast.Tuple, ast.List)) or len(target.elts) != count:
        return None
    pairs = [_one(t, member) for t in target.elts]
    return None if any(p is None for p in pairs) else [p for p in pairs if p is not None]


def dim_names(pairs: list[Pair], defaults: list[str]) -> list[str] | None:
    """The dimension names `make_symbols` takes (variable `t`, bound `T`): the user's
    where a variable and its bound are upper/lower-case twins (or one of them is named),
    the default elsewhere; None when nothing is named or the names cannot be used."""
    out = []
    for (var, bound), default in zip(pairs, defaults):
        name = var if var is not None else (bound.lower() if bound is not None else None)
        if name is None or name != name.lower() or (bound is not None
                                                    and bound != name.upper()):
            out.append(default)  # no name, or not twins (`i, N`): the default stays
        elif _GENERATED.match(name) or name in _HELPERS:
            out.append(default)
        else:
            out.append(name)
    if out == defaults or len(set(out)) != len(out):
        return None
    return out


def _one(target: ast.expr, member: str) -> Pair | None:
    if member == "variables_and_bounds":
        if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
            var, bound = (_name(t) for t in target.elts)
            return (var, bound) if var != "" and bound != "" else None
        return None
    name = _name(target)
    if name == "":
        return None
    return (name, None) if member == "variables" else (None, name)


def _name(t: ast.expr) -> str | None:
    """A target's name; None for `_`; '' for anything but a plain name."""
    if not isinstance(t, ast.Name):
        return ""
    return None if t.id == "_" else t.id


def _statement(frame: FrameType) -> ast.stmt | None:
    """The innermost statement of the frame's file that spans the running line."""
    name, line = frame.f_code.co_filename, frame.f_lineno
    source = "".join(linecache.getlines(name, frame.f_globals))
    if not source:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or line):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best

