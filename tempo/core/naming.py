"""How errors name things in the user's words: a tensor by its `name=` or by the user's code
at its defining line ("`y = x[t + 5]` at prog.py:7"), dtypes as in `dtypes` (`float32`),
domains and points by the dimension names, never by internal ids (`T3.0`, `add#2`)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

_SITE = re.compile(r"^(?P<file>.*?):(?P<line>\d+): ?(?P<code>.*)$")
_MAX_CODE = 72


PARAM_TAG = "__MODULE_PARAM__"
"""Tag of the placeholders `nn.Module` makes for parameters and buffers: an undefined point
of one is a missing optimizer step or fixed(), which the run-time error says."""


def site_parts(site: str | None) -> tuple[str, int, str] | None:
    """(file, line, code) of a site string 'file:line: code' from `errors.user_site`."""
    if not site:
        return None
    m = _SITE.match(site.splitlines()[0])
    if m is None:
        return None
    return m["file"], int(m["line"]), m["code"].strip()


def where(site: str | None) -> str:
    """'prog.py:7' for a site; '' when the site is unknown."""
    parts = site_parts(site)
    return "" if parts is None else f"{os.path.basename(parts[0])}:{parts[1]}"


def code(site: str | None) -> str:
    """The user's source text at a site, shortened to one readable line."""
    parts = site_parts(site)
    text = "" if parts is None else _without_comment(parts[2])
    return text if len(text) <= _MAX_CODE else text[: _MAX_CODE - 3] + "..."


def at_site(site: str | None) -> str:
    """'`code` at prog.py:7' ('the code at prog.py:7' when the line's text is unknown)."""
    w, c = where(site), code(site)
    if not w:
        return "the code at an unknown line"
    return f"`{c}` at {w}" if c else f"the code at {w}"


def op_label(op: Any, names: Mapping[int, str] | None = None) -> str:
    """A user-facing name for the tensor an op makes: its `name=` or its defining line."""
    name = (names or {}).get(op.op_id)
    if name:
        w = where(op.site)
        return f"'{name}'" + (f" (defined at {w})" if w else "")
    if code(op.site):
        return f"the {kind(op)} {at_site(op.site)}"
    if where(op.site):
        return f"the {kind(op)} made at {where(op.site)}"
    return f"an internal {kind(op)}"


def tensor_label(sdg: Any, tid: Any) -> str:
    """`op_label` of a tensor id, naming the output when its op has several."""
    op = sdg.ops.get(tid.op_id)
    if op is None:
        return "a tensor the compiler removed"
    label = op_label(op, getattr(sdg, "names", None))
    return label if op.num_outputs <= 1 else f"output {tid.output_id} of {label}"


_KINDS = {"merge": "placeholder", "udf_source": "source_udf", "eval_symbol": "symbol value",
          "fill": "fill", "const": "constant", "sink_udf": "sink_udf", "map_udf": "map_udf",
          "rand": "random draw"}


def kind(op: Any) -> str:
    """What the user called to make this op ('placeholder', 'add', 'source_udf')."""
    name = getattr(op, "name", type(op).__name__)
    if name in ("udf_source", "map_udf", "sink_udf") and getattr(op, "with_ts", False):
        return {"udf_source": "source_with_ts_udf", "map_udf": "map_with_ts_udf",
                "sink_udf": "sink_with_ts_udf"}[name]
    if name in _KINDS:
        return _KINDS[name]
    if name == "region":  # a fused group: the user sees the op of the line it names
        site = getattr(op, "site", "")
        member = next((m for m in getattr(op, "body", ()) if site and m.site == site), None)
        return kind(member) if member is not None else "computation"
    described = op.describe() if hasattr(op, "describe") else name
    return described if described.isidentifier() else name


def dtype_word(dt: Any) -> str:
    """A dtype as spelled in `dtypes` (`float32`, `int8`), not its C name (`float`, `char`)."""
    from tempo.core.dtype import _ATTR_OF

    name = getattr(dt, "name", str(dt))
    return _ATTR_OF.get(name, name).rstrip("_")


def expr_word(e: Any) -> str:
    """An index expression without its outermost parentheses: 't - 1', 'max(t - 1, 0)'."""
    s = str(e)
    while s.startswith("(") and s.endswith(")") and _balanced(s[1:-1]):
        s = s[1:-1]
    return s


def index_word(members: Iterable[Any]) -> str:
    """An index sequence as the user writes it between brackets: 't - 1, b'."""
    return ", ".join(expr_word(m) for m in members)


def domain_word(domain: Any) -> str:
    """A domain as its dimension names: '(b, t)'; '()' for the empty domain."""
    return "(" + ", ".join(v.name for v in domain.variables) + ")"


def shape_word(shape: Any) -> str:
    """A shape as a Python tuple of dims: '(3, 4)', '(3,)', '(t + 1, 4)', '()'."""
    dims = [expr_word(d) for d in shape]
    return f"({dims[0]},)" if len(dims) == 1 else "(" + ", ".join(dims) + ")"


def point_word(values: Mapping[str, int]) -> str:
    """A point as 't = 5, b = 0'."""
    return ", ".join(f"{k} = {v}" for k, v in values.items())


def _without_comment(line: str) -> str:
    """The code of a line without a trailing `# comment` (a '#' inside quotes stays)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote and line[i - 1] != "\\" else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i].rstrip()
    return line


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0
