"""E8 (tempo.memsave): delegated to `tempo.memsave.bench.run_e8`, which owns its own grid."""

from __future__ import annotations

import importlib.util

from tempo.bench.experiments.common import TableSpec, points
from tempo.bench.registry import Experiment, Point, System, register


def _missing() -> str | None:
    try:
        found = importlib.util.find_spec("tempo.memsave.bench") is not None
    except (ImportError, ValueError):
        found = False
    return None if found else "tempo.memsave.bench.run_e8 not available yet"


class _MemsaveSystem(System):
    """Resolves availability at run time, so the entry works as soon as the module lands."""

    def missing_reason(self, cfg: dict | None = None) -> str | None:  # type: ignore[override]
        return _missing()


MEMSAVE = _MemsaveSystem("memsave", "tempo.memsave.bench:run_e8", "custom")


def _grid(quick: bool) -> list[Point]:
    return points("memsave", [MEMSAVE], [{}], lambda s, c: "memsave/run")


register(Experiment(
    "memsave", "E8 — memory-footprint reduction layers (tempo.memsave)",
    "The converted BERT keeps fewer bytes for backward, fits a larger batch under a fixed cap, "
    "and its gradients match the unconverted model.",
    [MEMSAVE], _grid, aliases=("e8",), timeout_s=1500,
    extra={"table": None}))


__all__ = ["TableSpec"]
