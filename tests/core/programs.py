"""Helpers for program tests: run a Tempo program and fetch results as torch tensors."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable
from typing import Any

import torch

from tempo.api import RecurrentTensor, TempoContext
from tempo.compiler.pipeline import CLEANUP


def run(cfg: Any, num_dims: int, build: Callable[..., dict[str, RecurrentTensor]],
        bounds: dict[int, int], both_stores: bool = True) -> dict[str, torch.Tensor]:
    """Build with the context's (var, bound) pairs; return every named tensor, all points
    stacked in domain order (bounds keyed by the position of the dimension).

    Runs the program four times — point stores with every pass off, block stores, the
    memory mode (every clean-up pass of the compiler and garbage collection on, blocks of 3
    points so reads span blocks, window reads in circular stores, memory tracked) and the
    swap mode (the same with swapping on under a cap of half its peak) — and requires all
    to agree bit for bit: each test checks every pipeline variant."""
    res = _run(cfg, num_dims, build, bounds)
    if not both_stores:  # the build has side effects (sinks into lists): run once
        return res
    block_cfg = dataclasses.replace(cfg, enable_hybrid_tensorstore=True, enable_inplace_write=True,
                                    enable_lazy_slice=True)
    blocked = _run(block_cfg, num_dims, build,
                   bounds)
    optimised, exe = run_once(memory_mode(block_cfg), num_dims, build, bounds)
    swapped = run_swapped(swap_mode(block_cfg), exe.accountant.peak, num_dims, build, bounds)
    for name in res:
        torch.testing.assert_close(blocked[name], res[name], rtol=0, atol=0)
        torch.testing.assert_close(optimised[name], res[name], rtol=0, atol=0)
        torch.testing.assert_close(swapped[name], res[name], rtol=0, atol=0)
    return res


def all_passes(cfg: Any) -> Any:
    """`cfg` with every clean-up pass of the compiler, vectorisation (of groups of any
    size, so that small test programs exercise it), garbage collection and the generated
    code's launchers (values consumed at once in locals) on."""
    on = {p.flag: True for p in CLEANUP if p.flag}
    return dataclasses.replace(cfg, **on, **VECTORIZATION, enable_gc=True,
                               executor_debug_mode=False, enable_custom_thunk_launchers=True)


VECTORIZATION = {"enable_vectorization": True, "enable_non_trivial_vectorization": True,
                 "reject_vec_groups_smaller_than": 1}


def memory_mode(cfg: Any) -> Any:
    """`all_passes(cfg)` with tiny store blocks and memory tracking (a cap never reached)."""
    return dataclasses.replace(all_passes(cfg), inc_statify_block_size=3,
                               device_memory_cap_bytes=1 << 40)


def swap_mode(cfg: Any) -> Any:
    """`memory_mode(cfg)` with swapping on for points of any size."""
    return dataclasses.replace(memory_mode(cfg), enable_swap=True, swap_bytes_min=0)


def run_swapped(cfg: Any, peak: int, num_dims: int, build: Callable[..., Any],
                bounds: dict[int, int]) -> dict[str, torch.Tensor]:
    """Results under a device cap below `peak` (the unswapped run's): half of it, else
    three quarters, else just under it — block stores and views are not swappable, so a
    program may need more than half its peak on the device; at the peak the run is
    unconstrained."""
    from tempo.core.errors import TempoMemoryError

    for cap in (peak // 2, peak * 3 // 4, peak - 1, peak):
        try:
            return run_once(dataclasses.replace(cfg, device_memory_cap_bytes=max(cap, 1)),
                            num_dims, build, bounds)[0]
        except TempoMemoryError:
            continue
    raise AssertionError("the swap run does not fit even under its unswapped peak")


def _run(cfg: Any, num_dims: int, build: Callable[..., dict[str, RecurrentTensor]],
         bounds: dict[int, int]) -> dict[str, torch.Tensor]:
    return run_once(cfg, num_dims, build, bounds)[0]


def run_once(cfg: Any, num_dims: int, build: Callable[..., dict[str, RecurrentTensor]],
             bounds: dict[int, int]) -> tuple[dict[str, torch.Tensor], Any]:
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
