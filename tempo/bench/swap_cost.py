"""The time cost of swapping: one program compiled with swap on and off, runs interleaved
in one process on one torch thread, min and median over repeats, with the memory each run
reports (device peak, bytes swapped, host pool peak).

    python -m tempo.bench.swap_cost [--steps 256] [--kib 384] [--repeats 7]

The program is the shape swapping exists for: a point per step made in a loop (an
observation of `--kib` KiB, then a layer of work on it), read again, in reverse, by a
second loop (a backward pass over the episode). With swap off every point stays on the
device between the two loops; with swap on the schedule offloads each after the first
loop's iteration and fetches it (prefetched) before the second loop reads it."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

MIB = 1 << 20


def compile_program(steps: int, kib: int, swap: bool, backend: str = "torch") -> Any:
    d = kib * 1024 // 4
    w = torch.randn(d, generator=torch.Generator().manual_seed(0))
    cfg = ExecutionConfig(dev="cpu", backend=backend, path="", enable_gc=True,
                          enable_swap=swap, swap_bytes_min=0,
                          device_memory_cap_bytes=1 << 50)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    out: list[float] = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: w * float(ts[t]), (d,), dtypes.float32,
                                  domain=(t,))
        h = (x * 0.5).tanh()
        (h[T - 1 - t] * 2.0).sum().sink_udf(lambda v: out.append(float(v)))
    return ctx.compile({T: steps})


def measure(steps: int, kib: int, repeats: int) -> dict[str, dict[str, float]]:
    exes = {"off": compile_program(steps, kib, False), "on": compile_program(steps, kib, True)}
    times: dict[str, list[float]] = {k: [] for k in exes}
    for _ in range(repeats):
        for k, exe in exes.items():  # interleaved
            t0 = time.perf_counter()
            exe.execute()
            times[k].append(time.perf_counter() - t0)
    res = {}
    for k, exe in exes.items():
        m = exe.memory_stats()
        res[k] = {"min_ms": min(times[k]) * 1e3, "median_ms": statistics.median(times[k]) * 1e3,
                  "peak_mib": m["peak_bytes"] / MIB, "swapped_mib": m["swapped_bytes"] / MIB,
                  "host_peak_mib": m["host_peak_bytes"] / MIB,
                  "prefetched_mib": m["prefetched_bytes"] / MIB}
    return res


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=256)
    p.add_argument("--kib", type=int, default=384, help="KiB per stored point")
    p.add_argument("--repeats", type=int, default=7)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    load = os.getloadavg()
    res = measure(a.steps, a.kib, a.repeats)
    print(f"swap cost: {a.steps} points of {a.kib} KiB, {a.repeats} interleaved runs, "
          f"1 torch thread, load {load[0]:.1f} -> {os.getloadavg()[0]:.1f}")
    print("| swap | min ms | median ms | device peak MiB | swapped MiB | host peak MiB | "
          "prefetched MiB |\n|---|---|---|---|---|---|---|")
    for k, r in res.items():
        print(f"| {k} | {r['min_ms']:.1f} | {r['median_ms']:.1f} | {r['peak_mib']:.1f} | "
              f"{r['swapped_mib']:.1f} | {r['host_peak_mib']:.1f} | {r['prefetched_mib']:.1f} |")
    print(f"on/off: min {res['on']['min_ms'] / res['off']['min_ms']:.2f}x, median "
          f"{res['on']['median_ms'] / res['off']['median_ms']:.2f}x")


if __name__ == "__main__":
    main()
