"""E7 in one process (BENCHMARKS §7.8): REINFORCE Monte-Carlo against TD(n) under the
64 MiB device cap with swap on — the memory table (device peak, bytes swapped, host pool
peak per objective and episode length), the memory traces (device bytes, swap-out and
swap-in bytes per 50 ms bucket) and the time per iteration, the objectives' runs
interleaved on one torch thread (min and median over repeats).

    python -m tempo.bench.e7_memory [--steps 64,256] [--iterations 4] [--repeats 3]

Writes results/e7/memory.md (appended, with the load) and results/e7/traces_T<T>.png.
The traces come from a thread sampling the executor's accountant every millisecond or so
(its live, host and swap counters), so they need no hook in the generated code; busy % is
not plotted (the run has no idle time on the CPU: every bucket is compute or memcpy)."""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.results import append_lines, results_path
from tempo.bench.systems import reinforce_tempo
from tempo.bench.systems.tempo_memory import memory_config
from tempo.bench.timing import StatsLogger

MIB = 1 << 20
CAP = 64 * MIB
OBJECTIVES = ("monte_carlo", "1_temporal_difference", "8_temporal_difference",
              "64_temporal_difference")
BUCKET_S = 0.05


def compile_point(objective: str, steps: int, iterations: int) -> tuple[Any, float]:
    """The E7 program at `steps` under the cap; (executor, compile CPU s)."""
    c = dict(reinforce_tempo.DEFAULTS)
    c.update(objective=objective, obs_shape=[3, 32, 32], num_envs=32, ep_len=steps,
             num_layers=2, params_per_layer=64, iterations=iterations)
    ctx, bounds = reinforce_tempo._program(c, StatsLogger(),
                                           memory_config(DeviceMemoryAccountant(CAP)))
    c0 = time.process_time()
    exe = ctx.compile(bounds)
    return exe, time.process_time() - c0


class Sampler:
    """Samples (time, device live, host live, swapped, fetched) of an accountant from a
    thread while a run executes."""

    def __init__(self, acct: Any) -> None:
        self.acct = acct
        self.rows: list[tuple[float, int, int, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        a, t0 = self.acct, time.perf_counter()
        while not self._stop.is_set():
            self.rows.append((time.perf_counter() - t0, a.live, a.host_live, a.swapped,
                              a.fetched))
            time.sleep(0.001)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def buckets(rows: list[tuple[float, int, int, int, int]]
            ) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per 50 ms bucket: start time, device MiB (max), swap-out MiB, swap-in MiB."""
    ts, dev, out, back = [], [], [], []
    k, n = 0, len(rows)
    t = 0.0
    prev_s = prev_f = 0
    while k < n:
        hi, peak = t + BUCKET_S, 0
        s, f = prev_s, prev_f
        while k < n and rows[k][0] < hi:
            peak = max(peak, rows[k][1])
            s, f = rows[k][3], rows[k][4]
            k += 1
        ts.append(t)
        dev.append(peak / MIB)
        out.append((s - prev_s) / MIB)
        back.append((f - prev_f) / MIB)
        prev_s, prev_f, t = s, f, hi
    return ts, dev, out, back


def plot_traces(traces: dict[str, list[tuple[float, int, int, int, int]]], steps: int,
                path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(traces), 1, figsize=(10, 2.4 * len(traces)), sharex=False)
    for ax, (name, rows) in zip(axes, traces.items()):
        ts, dev, out, back = buckets(rows)
        ax.plot(ts, [100 * d * MIB / CAP for d in dev], color="black", label="device mem %")
        ax.set_ylim(0, 105)
        ax.set_ylabel("% of 64 MiB")
        ax2 = ax.twinx()
        w = BUCKET_S * 0.45
        ax2.bar([t for t in ts], out, width=w, align="edge", color="tab:red", alpha=0.6,
                label="swap-out MiB")
        ax2.bar([t + w for t in ts], back, width=w, align="edge", color="tab:blue",
                alpha=0.6, label="swap-in MiB")
        ax2.set_ylim(bottom=0)
        ax2.set_ylabel("MiB / 50 ms")
        ax.set_title(f"{name}, T={steps}", fontsize=9)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right")
    axes[-1].set_xlabel("seconds into the run")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def measure(steps: int, iterations: int, repeats: int, out_dir: Path) -> list[str]:
    exes: dict[str, Any] = {}
    compile_cpu: dict[str, float] = {}
    for o in tqdm(OBJECTIVES, desc=f"compile T={steps}"):
        exes[o], compile_cpu[o] = compile_point(o, steps, iterations)
    times: dict[str, list[float]] = {o: [] for o in OBJECTIVES}
    traces: dict[str, list[tuple[float, int, int, int, int]]] = {}
    stats: dict[str, dict[str, Any]] = {}
    for rep in tqdm(range(repeats + 1), desc=f"runs T={steps}"):  # the first: a warm-up
        for o, exe in exes.items():  # interleaved
            with Sampler(exe.accountant) as smp:
                t0 = time.perf_counter()
                exe.execute()
                wall = time.perf_counter() - t0
            if rep:
                times[o].append(wall / iterations)
            if rep == repeats:
                traces[o], stats[o] = smp.rows, exe.memory_stats()
    plot_traces(traces, steps, out_dir / f"traces_T{steps}.png")
    td8 = stats["8_temporal_difference"]["peak_bytes"]
    td8_t = statistics.median(times["8_temporal_difference"])
    lines = [f"\n### T = {steps} ({iterations} iterations a run, {repeats} timed runs after a "
             f"warm-up, load {os.getloadavg()[0]:.1f})\n",
             "| objective | device peak MiB | swapped MiB per iteration | fetched MiB per "
             "iteration | host pool peak MiB | s/iter min | s/iter median | / TD(8) "
             "(median) | compile CPU s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for o in OBJECTIVES:
        s, ts = stats[o], times[o]
        lines.append(
            f"| {o} | {s['peak_bytes'] / MIB:.2f} | {s['swapped_bytes'] / MIB / iterations:.2f}"
            f" | {s['fetched_bytes'] / MIB / iterations:.2f} | {s['host_peak_bytes'] / MIB:.2f}"
            f" | {min(ts):.3f} | {statistics.median(ts):.3f} | "
            f"{statistics.median(ts) / td8_t:.2f} | {compile_cpu[o]:.2f} |")
    mc = stats["monte_carlo"]["peak_bytes"]
    lines.append(f"\nPeak device ratio MC / TD(8) at T={steps}: **{mc / td8:.1f}x**; "
                 f"traces: traces_T{steps}.png")
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default="64,256")
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(results_path("e7")))
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    out = Path(a.out)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"\n## `python -m tempo.bench.e7_memory` ({when}, cap 64 MiB, swap on, "
             "1 torch thread)"]
    for steps in (int(s) for s in a.steps.split(",")):
        lines += measure(steps, a.iterations, a.repeats, out)
    path = append_lines(out / "memory.md", lines)
    print("\n".join(lines))
    print(f"appended to {path}")


if __name__ == "__main__":
    main()
