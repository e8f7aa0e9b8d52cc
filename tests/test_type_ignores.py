"""House rule: every `# type: ignore` in tempo/ names its error code and says why, in a
comment after it or in the comment block right above it containing "ignore:" (mypy itself,
with warn_unused_ignores, reports the ones that are no longer needed)."""

from __future__ import annotations

import re
from pathlib import Path

import tempo

_IGNORE = re.compile(r"#\s*type:\s*ignore(\[[a-z, -]+\])?(.*)$")


def _unexplained(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    bad = []
    for n, line in enumerate(lines):
        m = _IGNORE.search(line)
        if m is None:
            continue
        if m.group(1) is None:
            bad.append(f"{path}:{n + 1}: no error code")
            continue
        if m.group(2).strip().lstrip("#").strip():
            continue  # a reason after the ignore
        k, above = n - 1, []
        while k >= 0 and lines[k].strip().startswith("#"):
            above.append(lines[k])
            k -= 1
        if not any("ignore:" in c for c in above):
            bad.append(f"{path}:{n + 1}: no reason")
    return bad


def test_every_type_ignore_has_a_code_and_a_reason() -> None:
    root = Path(tempo.__file__).parent
    bad = [b for p in sorted(root.rglob("*.py")) for b in _unexplained(p)]
    assert not bad, "\n".join(bad)
