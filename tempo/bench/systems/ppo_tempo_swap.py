"""Tempo's PPO system of E6 (BENCHMARKS.md §7.7): the E5 program (ppo_tempo) under the
point's device cap with swapping on, and the time cost of that swapping.

Two executables of the same program are compiled: the capped one (Tempo's accountant,
swap to the host pool, incrementalisation, blocks sized for the cap: tempo_memory) and an
uncapped, untracked one (what E5 times). After a warm-up run of each, their runs are
interleaved (BENCHMARKS §1.5) and both are reported: `iter_mean` is the capped system's
time per iteration — the number compared with CleanRL-style — and `iter_nocap_mean` the
same program's without a cap (untracked, regions as grouped eager calls), so
`swap_time_ratio` is what fitting under the cap costs: swapping, and the capped program's
tracking, incrementalisation and unfused ops.
Memory (device peak, swapped bytes, host pool) comes from the capped runs."""

from __future__ import annotations

import statistics
import time
from typing import Any

from tempo.bench.baselines.ppo_cleanrl import DEFAULTS
from tempo.bench.clock import cpu_seconds
from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.systems.ppo_tempo import _program
from tempo.bench.systems.tempo_memory import memory_config, report_memory
from tempo.bench.timing import StatsLogger

REPEATS = 2  # interleaved timed runs of each executable after its warm-up
# Both executables run their fused regions as eager calls: a region marked for
# torch.compile compiles once its eager calls pass TUNING.payback_s (60 s), which the
# capped runs at 3x96x96 and up reach mid-run, so one timed iteration would carry an
# inductor compile (164 s/iter against 17 measured). The time compared is what the cap
# costs (swap, tracking, incrementalisation), not when a compile lands. (torch.compile of
# the E6 learner's regions compiles on this graph now; a region inductor fails on runs
# eagerly with a warning, prims/region.py.)
EAGER_REGIONS = {"torch_compilation_backend": "eager"}


def train_tempo_torch_swap(cfg: dict[str, Any], acct: DeviceMemoryAccountant,
                           logger: StatsLogger) -> dict[str, Any]:
    """`tempo-torch` system of E6 (falls back to E5's timing when no cap is set)."""
    if acct.cap_bytes is None:
        from tempo.bench.systems.ppo_tempo import train

        return train(cfg, acct, logger, "torch")
    c = dict(DEFAULTS)
    c.update({k: v for k, v in cfg.items() if v is not None})
    ctx, bounds = _program(c, "torch", logger, {**memory_config(acct), **EAGER_REGIONS})
    w0, c0 = time.perf_counter(), cpu_seconds()
    capped = ctx.compile(bounds)
    compile_s, compile_cpu = time.perf_counter() - w0, cpu_seconds() - c0
    ctx, bounds = _program(c, "torch", StatsLogger(), EAGER_REGIONS)
    free = ctx.compile(bounds)
    exes = {"cap": capped, "nocap": free}
    times: dict[str, list[float]] = {k: [] for k in exes}
    for rep in range(REPEATS + 1):  # the first round is the warm-up
        for k, exe in exes.items():
            exe.reset()
            t0 = time.perf_counter()
            exe.execute()
            if rep:
                times[k].append(time.perf_counter() - t0)
    it = c["iterations"]
    cap_s, free_s = statistics.median(times["cap"]) / it, statistics.median(times["nocap"]) / it
    out = {"compile_s": compile_s, "compile_cpu_s": compile_cpu, "iter_mean": cap_s,
           "iter_min": min(times["cap"]) / it, "iter_nocap_mean": free_s,
           "iter_nocap_min": min(times["nocap"]) / it, "swap_time_ratio": cap_s / free_s,
           "execute_s": sum(times["cap"])}
    return {**out, **report_memory(capped, acct)}
