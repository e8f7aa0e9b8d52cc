"""`ctx.compile`: bounds check → pass pipeline → isl schedule → generated code.

It sits in the api, above both the compiler (which never imports the runtime) and the
runtime (which never rewrites the graph). Compile time is reported per stage in
`executor.compile_profile()` (ms) and written to `<cfg.path>/compilation_profile.json`;
a compile longer than two seconds prints its stages as they finish. Config fields this
Tempo cannot honour raise first (`tempo.core.config_support`)."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Mapping
from typing import Any

import tempo.prims  # noqa: F401 - registers every primitive's batching, cost and kernels
from tempo.api.compile_progress import CompileProgress
from tempo.compiler.bounds import check_spatial_slices, resolve_bounds
from tempo.compiler.index_range import check_index_ranges
from tempo.compiler.pipeline import run_pipeline
from tempo.core import naming
from tempo.core.config_support import check_supported
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import BoundError, IndexExprError, UnsupportedError
from tempo.core.index_expr import Symbol
from tempo.core.sdg import SDG, TensorId
from tempo.runtime.backend_registry import backend_for
from tempo.runtime.codegen_endings import Ending
from tempo.runtime.executor.executor import PythonExecutor
from tempo.schedule.scheduler import compute_schedule
from tempo.schedule.stop_order import check_ragged_reads, spread_ended_bounds, with_stop_order
from tempo.schedule.verify import verify_order

PROGRESS_AFTER_S = 2.0


def split_endings(sdg: SDG, bounds: Mapping[Symbol, Any] | None, site: str,
                  default_max: int) -> tuple[dict[Symbol, Any], tuple[Ending, ...]]:
    """Integer bounds, and the dimensions a boolean tensor ends: `{T: (max, done)}` runs the
    dimension to at most `max` points and stops after the first point where every element of
    `done` (a bool tensor over that dimension) is true; `{T: done}` (API §1.3, §7.10) is
    `{T: (default_max, done)}`, the config's `default_dim_upper_bound_size`."""
    ints: dict[Symbol, Any] = {}
    endings: list[Ending] = []
    for k, v in (bounds or {}).items():
        implicit = hasattr(v, "tensor_id")
        if implicit:
            v = (default_max, v)
        if not (isinstance(v, tuple) and len(v) == 2 and hasattr(v[1], "tensor_id")):
            ints[k] = v
            continue
        ints[k], done = v[0], v[1]
        var = k.as_var() if isinstance(k, Symbol) and k.is_bound else None
        if var is None or not done.unindexed_domain.has_dim(var):
            raise BoundError(f"the stop tensor of bound {k} must have {var} in its domain; "
                             f"its domain is {done.unindexed_domain}", site=site)
        if done.is_indexed or done.sdg is not sdg:
            raise BoundError(f"the stop tensor of bound {k} must be a tensor of this program, "
                             "not indexed (pass `done`, not `done[t]`)", site=site)
        if done.dtype != dtypes.bool_:
            raise BoundError(f"the stop tensor of bound {k} must be bool, got {done.dtype}",
                             site=site)
        said = _exhausted(sdg, k, done, default_max) if implicit else None
        endings.append(Ending(var.name, k.name, int(v[0]) if isinstance(v[0], int) else -1,
                              done.tensor_id, said, site))
    return ints, tuple(endings)


def _exhausted(sdg: SDG, bound: Symbol, done: Any, maximum: int) -> str:
    """What a bare boolean bound says when it reaches the config's maximum undone: the run
    stops there rather than leaving a silently truncated dimension."""
    stop = naming.tensor_label(sdg, done.tensor_id)
    return (f"dimension {bound.as_var()} reached its maximum of {maximum} points with its "
            f"stop tensor ({stop}, the bound {bound}) never true; `{{{bound}: done}}` takes "
            "the maximum from ExecutionConfig.default_dim_upper_bound_size: raise that, or "
            f"give the maximum yourself, `{{{bound}: (max, done)}}`, to end there quietly")


def compile_sdg(
    sdg: SDG, cfg: ExecutionConfig, bounds: Mapping[Symbol, Any] | None, site: str
) -> PythonExecutor:
    """An executor for the recorded graph (which is left untouched)."""
    check_supported(cfg, site)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    backend = backend_for(cfg, site)  # a device it cannot have fails here, at the compile line
    timings["backend"] = (time.perf_counter() - t0) * 1e3  # jax's first import is ~2 s
    with CompileProgress(PROGRESS_AFTER_S) as progress:
        ints, endings = split_endings(sdg, bounds, site, cfg.default_dim_upper_bound_size)
        resolved = resolve_bounds(sdg, ints, site)
        check_spatial_slices(sdg, resolved)
        check_index_ranges(sdg, resolved)
        progress.start("passes")
        if endings:  # the stop tensors are outputs: nothing may optimise them away
            sdg = sdg.copy()
            sdg.keep |= {e.tensor for e in endings}
            for e in endings:  # the stop runs point by point over its tensor's dims
                sdg.loop_dims |= set(sdg.ops[e.tensor.op_id].domain.variables)
                sdg.ended_bounds |= {b for b in resolved if b.name == e.bound}
        graph = run_pipeline(sdg, cfg, resolved, timings, progress.done)
        # passes may add dimensions (blocks of incrementalisation or tiling), bound by them
        resolved.update({b: v for b, v in graph.bound_defs.items() if b not in resolved})
        for e in endings:
            op = graph.ops.get(e.tensor.op_id)
            if op is None or e.var not in {v.name for v in op.domain.variables}:
                raise UnsupportedError(f"the stop tensor of bound {e.bound} no longer varies "
                                       f"along {e.var} after optimisation", site=site)
        if cfg.visualize_pipeline_stages:
            _write(cfg, "sdg_0_recorded.dot", sdg.to_dot())
            _write(cfg, "sdg_1_optimised.dot", graph.to_dot())
        stored = _collected(graph, cfg)
        progress.start(f"scheduling {len(graph.ops)} ops (isl)")
        t = time.perf_counter()
        stops = [(e.tensor, e.var) for e in endings]
        graph = spread_ended_bounds(graph, stops)
        check_ragged_reads(graph, stops)
        order = with_stop_order(graph, stops)
        try:
            sched = compute_schedule(order, resolved, stored)
        except IndexExprError:
            plain = _plainer_error(sdg, cfg, resolved, stops)
            if plain is None:
                raise
            raise plain from None
        timings.update(sched.timings_ms)
        if cfg.validate_pipeline_stages:  # the generated order against every read
            t_v = time.perf_counter()
            verify_order(order, sched.tree, {b.name: int(v) for b, v in resolved.items()})
            timings["verify_schedule"] = (time.perf_counter() - t_v) * 1e3
        progress.done("schedule", (time.perf_counter() - t) * 1e3, _isl_note(sched.timings_ms))
        progress.start("code generation")
        exe = PythonExecutor(graph, sched, cfg, {b.name: v for b, v in resolved.items()},
                             timings, endings, backend)
        progress.done("codegen", timings.get("codegen", 0.0))
        timings["total"] = (time.perf_counter() - t0) * 1e3
    if cfg.render_schedule:
        _write(cfg, "schedule.txt", exe.schedule_text())
    if cfg.writes_artefacts():  # no ./runs/<timestamp>/ unless the user asked
        _write(cfg, "compilation_profile.json", json.dumps(timings, indent=1))
    return exe


#: The passes that batch, fuse or tile ops: an out-of-range read found after them is
#: explained on the graph without them, where each op is still one user line over its
#: own dims (vectorised over b, a missing base case at b >= 1 reads as "t - 1 < 0").
_RESHAPING: dict[str, Any] = {"enable_vectorization": False, "enable_fusion": False,
              "enable_dataflow_grouping": False, "enable_incrementalization": False,
              "enable_statifying_incrementalization": False}


def _plainer_error(sdg: SDG, cfg: ExecutionConfig, resolved: dict[Symbol, int],
                   stops: list[tuple[TensorId, str]]) -> IndexExprError | None:
    """The same mistake's error from the graph without the reshaping passes (only run on
    the error path), or None when that graph schedules (then the first error stands)."""
    if all(getattr(cfg, k) == v for k, v in _RESHAPING.items()):
        return None
    plain_cfg = dataclasses.replace(cfg, **_RESHAPING)
    try:
        graph = run_pipeline(sdg, plain_cfg, resolved)
        graph = spread_ended_bounds(graph, stops)
        compute_schedule(with_stop_order(graph, stops), resolved, _collected(graph, plain_cfg))
    except IndexExprError as err:
        return err
    except Exception:  # noqa: BLE001 - the explanation is best effort; the first error stands
        return None
    return None


def _collected(graph: SDG, cfg: ExecutionConfig) -> list[TensorId]:
    """Tensors whose points are freed after their last read: none without `enable_gc`;
    with it, all but kept ones and those whose points are statically smaller than
    `gc_bytes_min` (freeing tiny points costs more than keeping them)."""
    if not cfg.enable_gc:
        return []
    out = []
    for tid, info in graph.tensors.items():
        small = (cfg.gc_bytes_min > 0 and info.shape.is_static()
                 and info.shape.as_static().prod() * info.dtype.repr_bytes < cfg.gc_bytes_min)
        if tid not in graph.keep and not small:
            out.append(tid)
    return out


def _isl_note(ms: Mapping[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f} ms" for k, v in ms.items())


def _write(cfg: ExecutionConfig, name: str, text: str) -> None:
    """A compile artefact under `cfg.path`; an unwritable path loses it, not the compile."""
    try:
        os.makedirs(cfg.path, exist_ok=True)
        with open(os.path.join(cfg.path, name), "w") as f:
            f.write(text)
    except OSError:
        pass
