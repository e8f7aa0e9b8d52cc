"""The check every user-mistake case passes (tests/core/test_user_errors*.py): the right
`TempoError` subclass, raised naming the line marked `# MISTAKE` in the case (not a later
sink or compile call), in the user's words: no internal ids (`T3.0`, `add#2`), no isl
sets (`{ S2[...] }`), no mention of isl, no object reprs (`StaticShape(2, 3)`, `Domain(b)`)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest

from tempo.core import errors

INTERNAL = re.compile(r"T\d+\.\d+|\w#\d+|\{ S\d+|\bisl\b|Shape\(|Domain\(")


def mistake_line(case: Callable[..., Any]) -> int:
    lines, first = inspect.getsourcelines(case)
    marked = [first + k for k, line in enumerate(lines) if "# MISTAKE" in line]
    assert len(marked) == 1, f"{case.__name__} must mark exactly one line"
    return marked[0]


def check_mistake(case: Callable[[Any], None], cls: type[Exception], words: tuple[str, ...],
                  cfg: Any) -> str:
    """Run `case(cfg)`; its error must be `cls`, name the marked line and say `words`."""
    with pytest.raises(cls) as info:
        case(cfg)
    msg = str(info.value)
    assert isinstance(info.value, errors.TempoError)
    here = inspect.getsourcefile(case)
    assert here is not None
    assert f"{here.rsplit('/', 1)[-1]}:{mistake_line(case)}" in msg, msg
    assert not INTERNAL.search(msg), msg
    for w in words:
        assert w in msg, (w, msg)
    return msg
