"""How torch runs tanh on a CPU device: torch's own `tanh`, or API.md's definition of the
activation `2*sigmoid(2x) - 1` in three calls, whichever this machine runs faster.

Neither wins everywhere with torch 2.13: on the 2026-11-23 machine the CPU tanh cost 5x its
sigmoid (11.0 vs 6.4 us at 64x64, 592 vs 107 us at 4096x64, one thread, AVX-512), and on
the 2026-11-28 one (same torch, AVX-512) tanh was the faster (2.8 vs 3.0 us at 64x64, 100
vs 128 us at 4096x64; addmm + tanh_ 10.1 vs 13.3 us for the sigmoid fold's three calls).
The thread setting matters too: with torch's default two threads on the loaded 2-core
machine, `torch.tanh` (and `exp`) of a 64x64 tensor took ~12 ms per call (parallelised at
4096 elements, waiting for a descheduled thread) where `sigmoid` took 3 us.
So the choice is measured once per process, at the first tanh a torch CPU kernel needs
(`cpu_tanh_form`: ~20-40 ms), and kept; `TEMPO_TORCH_CPU_TANH=native|sigmoid` fixes it
(reproducible runs, tests of both forms). Both are within 2e-7 of float64 tanh in float32
(`tests/compiler/test_region_linear_fold.py`), and the gradient rule does not depend on
the choice: d/dx (2 sigmoid(2x) - 1) = 1 - y^2 exactly, as for tanh.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from typing import Any

Kernel = Callable[..., Any]

NATIVE, SIGMOID = "native", "sigmoid"
FORMS = (NATIVE, SIGMOID)
ENV = "TEMPO_TORCH_CPU_TANH"
"""Environment variable that fixes the form (`native` or `sigmoid`) instead of measuring."""

CALIBRATION_SHAPES = ((64, 64), (4096, 64))
"""The sizes timed: a PPO rollout step's hidden layer (dispatch-bound) and its learner's
(bandwidth-bound); each form's time is the product of its two (a geometric mean)."""


@functools.cache
def cpu_tanh_form() -> str:
    """`NATIVE` or `SIGMOID`: the `ENV` setting, else the faster form on this machine
    (measured once, with the process's torch thread setting)."""
    forced = os.environ.get(ENV, "").strip().lower()
    if forced:
        if forced not in FORMS:
            raise ValueError(f"{ENV}={forced!r}: expected one of {FORMS}")
        return forced
    return faster_form()


def faster_form(rounds: int = 3, budget_s: float = 0.002,
                kernels: dict[str, Kernel] | None = None) -> str:
    """The form whose tanh (`kernels`, default `tanh_kernel`'s) takes less time at
    `CALIBRATION_SHAPES`: the two are timed alternately, `rounds` times, each over
    ~`budget_s`, and the minimum per call counts (the least disturbed by other processes
    on a shared machine)."""
    import torch

    runs = kernels or {f: tanh_kernel(f) for f in FORMS}
    gen = torch.Generator().manual_seed(0)
    score = {NATIVE: 1.0, SIGMOID: 1.0}
    for shape in CALIBRATION_SHAPES:
        x = torch.rand(shape, generator=gen) * 6.0 - 3.0
        calls = {f: _calls_in(runs[f], x, budget_s) for f in FORMS}
        best = {f: float("inf") for f in FORMS}
        for _ in range(rounds):
            for f in FORMS:
                best[f] = min(best[f], _per_call(runs[f], x, calls[f]))
        for f in FORMS:
            score[f] *= best[f]
    return NATIVE if score[NATIVE] <= score[SIGMOID] else SIGMOID


def _calls_in(run: Kernel, x: Any, budget_s: float) -> int:
    """How many calls `run(x)` take about `budget_s` (at least 3)."""
    return max(3, int(budget_s / max(_per_call(run, x, 2), 1e-7)))


def _per_call(run: Kernel, x: Any, n: int) -> float:
    """Seconds per call of `run(x)` over `n` calls."""
    start = time.perf_counter()
    for _ in range(n):
        run(x)
    return (time.perf_counter() - start) / n


def tanh_kernel(form: str | None = None) -> Kernel:
    """tanh(x) on a CPU device in `form` (None: `cpu_tanh_form()`): `torch.tanh`, or
    `2*sigmoid(2x) - 1` in three calls (mul, in-place sigmoid, one add). The sigmoid form's
    max abs error against float64 tanh is 1.8e-7 over [-12, 12] in float32 (torch.tanh:
    3e-8; float32's ulp at 1 is 1.2e-7)."""
    return _tanh_kernel(form or cpu_tanh_form())


@functools.cache
def _tanh_kernel(form: str) -> Kernel:
    import torch

    if form == NATIVE:
        return torch.tanh
    mul, finish = torch.mul, tanh_of_doubled()
    return lambda x: finish(mul(x, 2.0))


def tanh_in_place(z: Any) -> Any:
    """tanh of a fresh tensor `z` (a fold's addmm), in place: the native form's tail."""
    return z.tanh_()


@functools.cache
def tanh_of_doubled() -> Kernel:
    """`z2 -> tanh(z2 / 2)` as `2*sigmoid(z2) - 1`, z2 a fresh tensor it may overwrite (the
    tail of the sigmoid form and of its linear fold, `region_folds.linear_tanh_kernel`):
    the sigmoid in place, then one call for 2s - 1. In float16/bfloat16 the form cancels
    near 0 (sigmoid's result rounds to half an ulp of 0.5: tanh(x) off by up to 2^-9 in
    bfloat16, all of a small value), so those take torch.tanh of z2 / 2 (exact halving)."""
    import torch

    add = torch.add
    minus_one = {dt: torch.tensor(-1.0, dtype=dt) for dt in (torch.float32, torch.float64)}
    half_types = (torch.float16, torch.bfloat16)

    def finish(z2: Any) -> Any:
        if z2.dtype in half_types:
            return z2.mul_(0.5).tanh_()
        z2.sigmoid_()
        return add(minus_one[z2.dtype], z2, alpha=2.0)

    return finish
