"""End-to-end smoke test of the harness: one tiny E1 point plus one OOM point, through the CLI
(subprocess per system), then the files and formats it must produce (not timings)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path


def test_quick_point_end_to_end(tmp_path: Path) -> None:
    res = tmp_path / "results"
    cmd = [sys.executable, "-m", "tempo.bench", "e1", "--quick", "--systems", "torch",
           "--results", str(res)]
    work = tmp_path / "cwd"  # nothing may be written outside the results root
    work.mkdir()
    subprocess.run(cmd, cwd=work, check=True, capture_output=True, timeout=300)
    assert list(work.iterdir()) == []
    ok = res / "gpt2_decode/tpt/torch_seq64_attncausal_win128_bs4"
    summary = json.loads((ok / "summary_results.json").read_text())
    for key in ("name", "elapsed_time", "comp_time", "avg_iter_time", "n_iterations", "tpt",
                "mean_cpu_util", "mean_cpu_mem_util", "peak_rss_bytes", "peak_device_bytes",
                "peak_rss_source", "loadavg_1min_start", "points_in_process"):
        assert key in summary, key
    assert summary["peak_device_bytes"] > 0
    with open(ok / "monitor.csv") as f:
        header = next(csv.reader(f))
    assert header[:4] == ["elapsed_ns", "curr_time", "cpu_util", "cpu_mem_util"]
    oom = res / "gpt2_decode/tpt/torch_seq4096_attncausal_win128_bs4/error.txt"
    assert "out of memory" in oom.read_text()
    report = (res / "REPORT.md").read_text()
    assert "E1" in report and "OOM" in report and "MISSING" in report
    assert (res / "plots/gpt2_decode/tpt.png").stat().st_size > 1000
    # skip-if-exists: a second run must not touch the existing point
    mtime = (ok / "summary_results.json").stat().st_mtime
    subprocess.run(cmd, cwd=work, check=True, capture_output=True, timeout=300)
    assert (ok / "summary_results.json").stat().st_mtime == mtime
