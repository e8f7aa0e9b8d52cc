"""The compile driver: bounds check → passes in order → isl schedule → generated code.

Each pass is one module with `run(sdg, cfg) -> sdg`, switched by its ExecutionConfig flag;
compile time is reported per phase in `executor.get_compilation_time_breakdown()`."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping

from tempo.compiler.passes import commit_recurrences, dead_code, dedup, storage
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import BoundError
from tempo.core.index_expr import Symbol
from tempo.core.sdg import SDG, TensorId
from tempo.runtime.executor.executor import PythonExecutor
from tempo.schedule.scheduler import compute_schedule

Pass = Callable[[SDG, ExecutionConfig], SDG]


def pipeline(cfg: ExecutionConfig) -> list[tuple[str, Pass]]:
    """The passes the config switches on, in the order of ARCHITECTURE.md §5."""
    passes: list[tuple[str, Pass]] = [("commit_recurrences", commit_recurrences.run)]
    if cfg.enable_algebraic_optimizer:
        passes.append(("drop_trivial_merges", commit_recurrences.drop_trivial_merges))
    if cfg.enable_duplicate_code_elim:
        passes.append(("dedup", dedup.run))
    if cfg.enable_dead_code_elim:
        passes.append(("dead_code", dead_code.run))
    passes.append(("storage", storage.run))
    return passes


def resolve_bounds(sdg: SDG, bounds: Mapping[Symbol, int] | None, site: str) -> dict[Symbol, int]:
    """Every universe bound needs an integer value (a missing one is a BoundError)."""
    given = dict(sdg.bound_defs)
    for k, v in (bounds or {}).items():
        if not isinstance(k, Symbol) or not k.is_bound:
            raise BoundError(f"compile bounds must be keyed by bound symbols, got {k!r}", site=site)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise BoundError(f"bound {k} must be a positive int, got {v!r}", site=site)
        given[k] = v
    out: dict[Symbol, int] = {}
    for var in sdg.universe.variables:
        b = var.as_bound()
        if b not in given:
            raise BoundError(f"no value for bound {b} (of variable {var}) at compile", site=site)
        out[b] = int(given[b])
    return out


def compile_sdg(
    sdg: SDG, cfg: ExecutionConfig, bounds: Mapping[Symbol, int] | None, site: str
) -> PythonExecutor:
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    resolved = resolve_bounds(sdg, bounds, site)
    sdg = sdg.copy()
    for name, fn in pipeline(cfg):
        t = time.perf_counter()
        sdg = fn(sdg, cfg)
        timings[f"pass:{name}"] = (time.perf_counter() - t) * 1e3
    stored: list[TensorId] = [] if not cfg.enable_gc else [
        tid for tid in sdg.tensors if tid not in sdg.keep
    ]
    sched = compute_schedule(sdg, resolved, stored)
    timings.update(sched.timings_ms)
    exe = PythonExecutor(sdg, sched, cfg, {b.name: v for b, v in resolved.items()}, timings)
    timings["total"] = (time.perf_counter() - t0) * 1e3
    _write_profile(cfg, timings)
    return exe


def _write_profile(cfg: ExecutionConfig, timings: dict[str, float]) -> None:
    if not cfg.writes_artefacts():  # no ./runs/<timestamp>/ unless the user asked
        return
    try:
        os.makedirs(cfg.path, exist_ok=True)
        with open(os.path.join(cfg.path, "compilation_profile.json"), "w") as f:
            json.dump(timings, f, indent=1)
    except OSError:
        pass
