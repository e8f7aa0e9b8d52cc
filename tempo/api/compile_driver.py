"""`ctx.compile`: bounds check → pass pipeline → isl schedule → generated code.

It sits in the api, above both the compiler (which never imports the runtime) and the
runtime (which never rewrites the graph). Compile time is reported per stage in
`executor.compile_profile()` (ms) and written to `<cfg.path>/compilation_profile.json`;
a compile longer than two seconds prints its stages as they finish."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping

from tempo.api.compile_progress import CompileProgress
from tempo.compiler.bounds import resolve_bounds
from tempo.compiler.pipeline import run_pipeline
from tempo.core.configs import ExecutionConfig
from tempo.core.index_expr import Symbol
from tempo.core.sdg import SDG, TensorId
from tempo.runtime.executor.executor import PythonExecutor
from tempo.schedule.scheduler import compute_schedule

PROGRESS_AFTER_S = 2.0


def compile_sdg(
    sdg: SDG, cfg: ExecutionConfig, bounds: Mapping[Symbol, int] | None, site: str
) -> PythonExecutor:
    """An executor for the recorded graph (which is left untouched)."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    with CompileProgress(PROGRESS_AFTER_S) as progress:
        resolved = resolve_bounds(sdg, bounds, site)
        progress.start("passes")
        graph = run_pipeline(sdg, cfg, resolved, timings, progress.done)
        stored: list[TensorId] = [] if not cfg.enable_gc else [
            tid for tid in graph.tensors if tid not in graph.keep
        ]
        progress.start(f"scheduling {len(graph.ops)} ops (isl)")
        t = time.perf_counter()
        sched = compute_schedule(graph, resolved, stored)
        timings.update(sched.timings_ms)
        progress.done("schedule", (time.perf_counter() - t) * 1e3, _isl_note(sched.timings_ms))
        progress.start("code generation")
        exe = PythonExecutor(graph, sched, cfg, {b.name: v for b, v in resolved.items()},
                             timings)
        progress.done("codegen", timings.get("codegen", 0.0))
        timings["total"] = (time.perf_counter() - t0) * 1e3
    _write_profile(cfg, timings)
    return exe


def _isl_note(ms: Mapping[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f} ms" for k, v in ms.items())


def _write_profile(cfg: ExecutionConfig, timings: dict[str, float]) -> None:
    if not cfg.writes_artefacts():  # no ./runs/<timestamp>/ unless the user asked
        return
    try:
        os.makedirs(cfg.path, exist_ok=True)
        with open(os.path.join(cfg.path, "compilation_profile.json"), "w") as f:
            json.dump(timings, f, indent=1)
    except OSError:
        pass
