"""Timing protocol (BENCHMARKS.md §7.1) and the StatsLogger that writes RL `log.csv`.

Decoders: time `compile()` separately, one untimed warm-up run, then whole runs until at least
`min_time` seconds and `min_runs` runs. RL: per-iteration timestamps; iteration 0 and the tail
are dropped and the mean of consecutive differences is the iteration time.
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass
from typing import Any, Protocol


class DecodeRunner(Protocol):
    """What an LM system exposes: a compile step and one full decode per `run()`."""

    seq_len: int

    def compile(self) -> None: ...

    def run(self) -> None: ...


@dataclass(frozen=True)
class TimingPolicy:
    """How long to repeat runs; `--quick` shrinks it to a single timed run."""

    warmup_runs: int = 1
    min_time: float = 3.0
    min_runs: int = 2

    @staticmethod
    def for_mode(quick: bool) -> TimingPolicy:
        return TimingPolicy(1, 0.0, 1) if quick else TimingPolicy()


def time_decoder(runner: DecodeRunner, policy: TimingPolicy,
                 on_warmup_done: Any = None) -> dict[str, float]:
    """Run the protocol; returns comp_time, warmup_time, avg_iter_time, n_iterations, tpt."""
    t0 = time.perf_counter()
    runner.compile()
    comp_time = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(policy.warmup_runs):
        runner.run()
    warmup_time = time.perf_counter() - t0
    if on_warmup_done is not None:
        on_warmup_done()
    n, start = 0, time.perf_counter()
    while n < policy.min_runs or time.perf_counter() - start < policy.min_time:
        runner.run()
        n += 1
    elapsed = time.perf_counter() - start
    avg = elapsed / n
    return {
        "elapsed_time": elapsed, "comp_time": comp_time, "warmup_time": warmup_time,
        "avg_iter_time": avg, "n_iterations": n, "tpt": avg / runner.seq_len,
    }


class StatsLogger:
    """wandb-like logger of §1.4: rows keyed by `iteration`, timestamps added, CSV at finish."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter_ns()
        self.rows: dict[int, dict[str, Any]] = {}

    def log(self, row: dict[str, Any]) -> None:
        if "iteration" not in row:
            raise KeyError("StatsLogger.log requires an 'iteration' key")
        now = time.perf_counter_ns()
        it = int(row["iteration"])
        merged = self.rows.setdefault(it, {})
        merged.update({k: (float(v) if hasattr(v, "item") else v) for k, v in row.items()})
        merged["elapsed_ns"] = now - self.t0
        merged["curr_time"] = now

    def finish(self, path: str) -> None:
        keys = sorted({k for r in self.rows.values() for k in r})
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            for it in sorted(self.rows):
                w.writerow(self.rows[it])

    def iter_mean(self) -> float | None:
        """Mean consecutive timestamp difference from iteration 1 to the last (iteration 0 and
        the tail are excluded, as `get_normalized_dfs` does)."""
        ts = [self.rows[i]["curr_time"] for i in sorted(self.rows) if i >= 1]
        if len(ts) < 2:
            return None
        return (ts[-1] - ts[0]) / (len(ts) - 1) / 1e9


def write_config(path: str, cfg: dict[str, Any]) -> None:
    """`log.config`: a one-row CSV of the config's Python reprs."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(list(cfg))
        w.writerow([repr(v) for v in cfg.values()])
