"""Helpers for program tests: run a Tempo program and fetch results as torch tensors.

`run` runs a program plainly and then under every forced mode of `MODES` (tiny store
blocks, circular stores wherever legal, swapping under a tiny device cap, tiled reads of
blocks of 2, ...), each of
which must agree with the plain run. A new mode is one `Mode(...)` line in `MODES`."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable
from typing import Any

import torch

from tempo.api import RecurrentTensor, TempoContext
from tempo.compiler.pipeline import CLEANUP
from tempo.core.ops_fused import AttentionOp
from tempo.core.ops_tiled import TiledAttentionOp

Build = Callable[..., dict[str, RecurrentTensor]]
Results = dict[str, torch.Tensor]


@dataclasses.dataclass(frozen=True)
class Program:
    """One program test's build function, dimension count and bounds."""

    num_dims: int
    build: Build
    bounds: dict[int, int]


Runner = Callable[[Any, Program, dict[str, Any]], tuple[Results, Any]]


def run_plain(cfg: Any, prog: Program, done: dict[str, Any]) -> tuple[Results, Any]:
    """One compile and run (`done`, the executors of earlier modes, is unused)."""
    return run_once(cfg, prog.num_dims, prog.build, prog.bounds)


@dataclasses.dataclass(frozen=True)
class Mode:
    """A configuration every program test also runs under: `configure` turns the test's
    config into it, `runner` compiles and runs (it may look at earlier modes' executors),
    and the results must equal the plain run's — bit for bit, or within `atol` for modes
    that reassociate floating-point sums (blocked reductions)."""

    name: str
    configure: Callable[[Any], Any]
    runner: Runner = run_plain
    atol: float = 0.0
    rtol: float = 0.0
    backends: tuple[str, ...] = ("torch", "jax", "numpy")  # where the mode differs


def run(cfg: Any, num_dims: int, build: Build, bounds: dict[int, int],
        both_stores: bool = True) -> Results:
    """Build with the context's (var, bound) pairs; return every named tensor, all points
    stacked in domain order (bounds keyed by the position of the dimension).

    Runs the program plainly under `cfg`, then under every mode of `MODES`, and requires
    each to agree with the plain run: each program test checks every pipeline variant.
    `both_stores=False` (the build has side effects, e.g. sinks into lists) runs it once."""
    prog = Program(num_dims, build, bounds)
    res, _ = run_plain(cfg, prog, {})
    if not both_stores:
        return res
    done: dict[str, Any] = {}
    for mode in MODES:
        if cfg.backend not in mode.backends:
            continue
        mode_cfg = mode.configure(cfg)
        got, done[mode.name] = mode.runner(mode_cfg, prog, done)
        rtol, atol = _tolerance(mode, mode_cfg, done[mode.name])
        for name in res:
            torch.testing.assert_close(got[name], res[name], rtol=rtol, atol=atol,
                                       msg=lambda m, n=name, md=mode.name: f"mode {md!r}, "
                                       f"tensor {n!r} differs from the plain run: {m}")
    return res


JAX_FUSED_TOL = 1e-6
"""XLA compiles a fused region as one kernel and may contract a * b + c into one rounding
(an FMA), so jax results with fusion on match the unfused run to a few ulps, not bitwise;
torch and numpy regions call the same kernels and stay bit for bit."""


LOWERED_ATTENTION_TOL = 1e-6
"""Hand-written attention lowered to the fused primitive (compiler/passes/lower_fused*)
runs the backend's scaled_dot_product_attention, which scales and sums in its own order:
a few ulps from the composite the plain run (optimisations off) computes. The lowering's
own tests compare it with torch eager, values and gradients."""


def _lowered_attention(exe: Any) -> bool:
    bodies = [getattr(op, "body", (op,)) for op in exe.sdg.ops.values()]
    return any(isinstance(m, AttentionOp | TiledAttentionOp) for b in bodies for m in b)


def _tolerance(mode: Mode, cfg: Any, exe: Any) -> tuple[float, float]:
    """(rtol, atol) for comparing `mode` (run under `cfg`, by `exe`) with the plain run."""
    tol = 0.0
    if cfg.backend == "jax" and cfg.enable_dataflow_grouping and cfg.enable_group_fusions:
        tol = JAX_FUSED_TOL
    if _lowered_attention(exe):
        tol = max(tol, LOWERED_ATTENTION_TOL)
    return max(mode.rtol, tol), max(mode.atol, tol)


def all_passes(cfg: Any) -> Any:
    """`cfg` with every clean-up pass of the compiler, vectorisation (of groups of any
    size, so that small test programs exercise it), fusion (regions compiled by the
    backend), garbage collection and the generated code's launchers (values consumed at
    once in locals) on."""
    on = {p.flag: True for p in CLEANUP if p.flag}
    return dataclasses.replace(cfg, **on, **VECTORIZATION, **FUSION, enable_gc=True,
                               executor_debug_mode=False, enable_custom_thunk_launchers=True)


VECTORIZATION = {"enable_vectorization": True, "enable_non_trivial_vectorization": True,
                 "reject_vec_groups_smaller_than": 1}
FUSION = {"enable_dataflow_grouping": True, "enable_group_fusions": True,
          "enable_codegen_dataflows": True}


def blocks_mode(cfg: Any) -> Any:
    """`cfg` with block stores of 2 points for tensors read through slices (reads span
    blocks), written in place and read as views."""
    return dataclasses.replace(cfg, enable_hybrid_tensorstore=True, enable_inplace_write=True,
                               enable_lazy_slice=True, inc_statify_block_size=2)


def fused_mode(cfg: Any) -> Any:
    """`all_passes(blocks_mode(cfg))`, untracked: fusion into regions (the modes below
    set a memory cap: their regions are charged their scratch bytes around each call)."""
    return all_passes(blocks_mode(cfg))


def loops_mode(cfg: Any) -> Any:
    """`fused_mode(cfg)` with compiled loops (jax only: loops whose body qualifies run as
    one jax.lax.scan per run of iterations; runtime/loops.py)."""
    return dataclasses.replace(fused_mode(cfg), enable_compiled_loops=True)


def memory_mode(cfg: Any) -> Any:
    """`all_passes(blocks_mode(cfg))` with blocks of 3 points and memory tracking (a cap
    never reached): window reads get circular stores where they save memory."""
    return dataclasses.replace(all_passes(blocks_mode(cfg)), inc_statify_block_size=3,
                               device_memory_cap_bytes=1 << 40)


def swap_mode(cfg: Any) -> Any:
    """`memory_mode(cfg)` with swapping on for points of any size."""
    return dataclasses.replace(memory_mode(cfg), enable_swap=True, swap_bytes_min=0)


def incremental_mode(cfg: Any) -> Any:
    """`memory_mode(cfg)` with incrementalisation of every tensor above 16 bytes (blocks
    of one or a few rows)."""
    return dataclasses.replace(memory_mode(cfg), enable_incrementalization=True,
                               incrementalize_mem_threshold=16, incrementalization_percentile=50)


def tiling_mode(cfg: Any) -> Any:
    """`memory_mode(cfg)` with the statify pass and static blocks of 2 points: attention
    over a growing or window read runs tiled (an online softmax: float rounding differs).
    On torch and numpy every tensor a window store can hold gets one (tiled window reads
    come from rings, in slot order where the reader does not mind)."""
    return dataclasses.replace(memory_mode(cfg), enable_statifying_incrementalization=True,
                               inc_statify_block_size=2,
                               enable_point_store_fallback=cfg.backend == "jax")


def circular_mode(cfg: Any) -> Any:
    """`memory_mode(cfg)` where every tensor a window store can legally hold gets one
    (store_choice's `force`), whether or not it saves memory: untiled window reads from
    the compacting store, point reads (x[t-1]) from rings (torch and numpy only: jax has
    no window stores)."""
    return dataclasses.replace(memory_mode(cfg), enable_point_store_fallback=False)


def run_swapped(cfg: Any, prog: Program, done: dict[str, Any]) -> tuple[Results, Any]:
    """Results under a tiny device cap: a quarter of the unswapped peak (the memory
    mode's), else half, three quarters, just under it — block stores and views are not
    swappable, so a program may need most of its peak on the device; at the peak the
    run is unconstrained.

    A cap can change the plan itself (vectorisation keeps a group's loops when its batched
    form would hold too much of the cap: `vectorize_plan`), and the looped plan may fit
    under a cap set from the vectorised peak without swapping anything. A run that swapped
    nothing under a cap below the peak is then repeated with caps set from its own (the
    capped plan's) peak, so the mode swaps whenever the capped plan can."""
    base = done.get("memory")
    if base is None:
        base = run_plain(memory_mode(cfg), prog, done)[1]
    peak = base.accountant.peak
    for _ in range(3):
        got, exe = _under_caps(cfg, prog, done, peak)
        stats = exe.memory_stats()
        if stats["swapped_bytes"] > 0 or stats["cap_bytes"] >= peak \
                or stats["peak_bytes"] >= peak:
            return got, exe
        peak = stats["peak_bytes"]  # the capped plan holds less: cap below its own peak
    return got, exe


def _under_caps(cfg: Any, prog: Program, done: dict[str, Any],
                peak: int) -> tuple[Results, Any]:
    """The first run that fits under a quarter, half, three quarters of `peak`, just
    under it, or at it."""
    from tempo.core.errors import TempoMemoryError

    for cap in (peak // 4, peak // 2, peak * 3 // 4, peak - 1, peak):
        try:
            return run_plain(dataclasses.replace(cfg, device_memory_cap_bytes=max(cap, 1)),
                             prog, done)
        except TempoMemoryError:
            continue
    raise AssertionError("the swap run does not fit even under its unswapped peak")


# Every program test runs under each of these after its plain run (in this order: the
# swap mode's cap comes from the memory mode's peak). Adding a mode is one line.
MODES: list[Mode] = [
    Mode("blocks", blocks_mode),
    Mode("fused", fused_mode),
    Mode("loops", loops_mode, backends=("jax",)),
    Mode("memory", memory_mode),
    Mode("circular", circular_mode, backends=("torch", "numpy")),
    Mode("swap", swap_mode, run_swapped),
    Mode("incremental", incremental_mode, atol=1e-5, rtol=1e-5),
    Mode("tiling", tiling_mode, atol=1e-5, rtol=1e-5),
]


def run_once(cfg: Any, num_dims: int, build: Build,
             bounds: dict[int, int]) -> tuple[Results, Any]:
    """One compile and run under `cfg`: every named tensor (kept from elimination) and the
    executor (whose `sdg` is the graph the passes left)."""
    ctx = TempoContext(cfg, num_dims=num_dims)
    pairs = ctx.variables_and_bounds
    with ctx:
        outs = build(*pairs)
    ctx.sdg.keep.update(rt.tensor_id for rt in outs.values())  # read back after the run
    exe = ctx.compile({pairs[k][1]: v for k, v in bounds.items()})
    exe.execute()
    res = {}
    for name, rt in outs.items():
        dom = rt.unindexed_domain
        idx = tuple(slice(0, bounds[ctx.variables.index(v)]) for v in dom.variables)
        res[name] = exe.get_spatial_tensor_torch(rt.tensor_id, idx)
    return res, exe


def program_tests() -> list[tuple[str, Callable[[Any], None]]]:
    """Every program test of tests/core (a `test_*` function taking only `cfg`), so other
    suites can run them all under other configurations."""
    found = []
    for mod_name in ("test_programs_temporal", "test_programs_spatial"):
        mod = importlib.import_module(mod_name)
        for name, fn in sorted(inspect.getmembers(mod, inspect.isfunction)):
            if name.startswith("test_") and list(inspect.signature(fn).parameters) == ["cfg"]:
                found.append((f"{mod_name}::{name}", fn))
    return found


def close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5) -> None:
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    torch.testing.assert_close(a, b, atol=atol, rtol=1e-5)


def owned(v: Any) -> torch.Tensor:
    """A sink's backend tensor (torch, jax or numpy) as an owned torch tensor."""
    if isinstance(v, torch.Tensor):
        return v.clone()
    return torch.from_dlpack(v).clone()
