"""Resource monitor writing `monitor.csv` (§1.4 columns; GPU columns come from the accountant).

A daemon thread in the system's own process samples at a fixed rate; on CPU there is no separate
device to watch, so a thread is enough and avoids a second interpreter per point.
"""

from __future__ import annotations

import threading
import time

import psutil

from tempo.bench.memory import DeviceMemoryAccountant

HEADER = "elapsed_ns,curr_time,cpu_util,cpu_mem_util,rss_bytes,gpu0_mem_util,dev_live_bytes\n"


class Monitor:
    """Samples CPU %, memory %, RSS and accountant live bytes at `hz` until stopped."""

    def __init__(self, path: str, acct: DeviceMemoryAccountant, hz: float = 10.0) -> None:
        self.path, self.acct, self.period = path, acct, 1.0 / hz
        self.rows: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._proc = psutil.Process()

    def __enter__(self) -> Monitor:
        self._proc.cpu_percent(None)
        self._t0 = time.perf_counter_ns()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        with open(self.path, "w") as f:
            f.write(HEADER)
            f.writelines(self.rows)

    def _loop(self) -> None:
        nxt = time.perf_counter()
        while not self._stop.is_set():
            now = time.perf_counter_ns()
            cap = self.acct.cap_bytes
            dev = self.acct.live
            dev_pct = f"{100.0 * dev / cap:.2f}" if cap else ""
            self.rows.append(
                f"{now - self._t0},{now},{self._proc.cpu_percent(None):.1f},"
                f"{psutil.virtual_memory().percent:.1f},{self._proc.memory_info().rss},"
                f"{dev_pct},{dev}\n")
            nxt += self.period  # catch-up loop, as the original monitor
            self._stop.wait(max(0.0, nxt - time.perf_counter()))

    def means(self) -> dict[str, float]:
        """Mean CPU util and memory util over the samples (for summary_results.json)."""
        if not self.rows:
            return {"mean_cpu_util": 0.0, "mean_cpu_mem_util": 0.0}
        cols = [r.split(",") for r in self.rows]
        return {
            "mean_cpu_util": round(sum(float(c[2]) for c in cols) / len(cols), 2),
            "mean_cpu_mem_util": round(sum(float(c[3]) for c in cols) / len(cols), 2),
        }
