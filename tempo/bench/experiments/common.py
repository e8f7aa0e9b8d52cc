"""Helpers shared by experiment definitions: grids of points and the table/plot spec."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tempo.bench.registry import Point, System

MIB = 1 << 20


@dataclass(frozen=True)
class TableSpec:
    """How the report tabulates an experiment: one row per `row(cfg)`, one column per system,
    `metric` scaled by `scale` (e.g. seconds -> ms), plus ratio columns `num/den`."""

    metric: str
    unit: str
    scale: float
    row: Callable[[dict[str, Any]], str]
    ratios: tuple[tuple[str, str], ...] = ()
    checks: tuple[Callable[[dict[str, dict[str, Any]]], tuple[str, str]], ...] = ()
    memory_note: str = ""
    extra_metrics: tuple[tuple[str, str, float], ...] = field(default_factory=tuple)


def points(exp: str, systems: Iterable[System], cfgs: Iterable[dict[str, Any]],
           dirname: Callable[[str, dict[str, Any]], str], base: dict[str, Any] | None = None
           ) -> list[Point]:
    """Cross systems with configs (deduplicated by directory)."""
    out: list[Point] = []
    seen: set[str] = set()
    for cfg in cfgs:
        for s in systems:
            if s.only_base and base is not None and any(cfg.get(k) != v for k, v in base.items()):
                continue
            rel = dirname(s.name, cfg)
            if rel in seen:
                continue
            seen.add(rel)
            out.append(Point(exp, s, rel, dict(cfg)))
    return out


def agreeing(v: float, bounds: Sequence[float], decimals: int = 2) -> str:
    """`v` with the fewest decimals (at least `decimals`) at which the printed number lies on
    the same side of every bound as `v` does, so a verdict never contradicts its own number
    ("did not hold — 1.60" for a bound of 1.6 prints 1.6004 instead)."""
    for d in range(decimals, 10):
        text = f"{v:.{d}f}"
        r = float(text)
        if all((r < b) == (v < b) and (r > b) == (v > b) for b in bounds):
            return text
    return repr(v)


def fmt(v: float | None, digits: int = 3) -> str:
    """Compact number for tables."""
    if v is None:
        return "–"
    return f"{v:.{digits}g}"
