"""Reading results back: each point is ok (summary_results.json), OOM or MISSING (§1.2).

A point whose directory is absent is MISSING with the registry's reason (or "not run"); an
`error.txt` is OOM if it mentions memory, MISSING otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tempo.bench.memory import is_oom_text
from tempo.bench.registry import Point

RESULTS = Path(__file__).resolve().parents[2] / "results"
"""The repository's results/: where every bench writes unless told otherwise, whatever the
working directory (`python -m tempo.bench...` run from elsewhere wrote a stray results/)."""


def results_path(rel: str | Path = "") -> Path:
    """`rel` under the repository's results/ (RESULTS)."""
    return RESULTS / rel


@dataclass
class Record:
    """Outcome of one point as read from disk."""

    point: Point
    status: str  # ok | OOM | MISSING
    summary: dict[str, Any] = field(default_factory=dict)
    reason: str = ""

    def get(self, key: str) -> float | None:
        v = self.summary.get(key)
        return float(v) if isinstance(v, int | float) else None


def load_record(results_root: Path, p: Point) -> Record:
    """Classify one point's directory."""
    d = results_root / p.rel_dir
    if (d / "summary_results.json").exists():
        with open(d / "summary_results.json") as f:
            return Record(p, "ok", json.load(f))
    if (d / "error.txt").exists():
        text = (d / "error.txt").read_text()
        first = next((ln for ln in text.splitlines() if ln.strip()), "")
        return Record(p, "OOM" if is_oom_text(text) else "MISSING", reason=first[:200])
    reason = p.system.missing_reason(p.cfg) or ("not run" if not d.exists() else "no results")
    return Record(p, "MISSING", reason=reason)


def load_records(results_root: Path, points: list[Point]) -> list[Record]:
    """All records of a grid, in grid order."""
    return [load_record(results_root, p) for p in points]


def append_lines(path: str | Path, lines: list[str]) -> Path:
    """Append a measurement script's printed lines to its log (the pair benches keep every
    run, each headed by its date and load); a relative `path` is under RESULTS."""
    out = Path(path) if Path(path).is_absolute() else results_path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.write("\n".join(lines) + "\n")
    return out
