"""Sequential launcher (§1.2 / §7.1): one subprocess per point, skip-if-exists, timeouts.

Experiments run one at a time on the CPU "device" with 2 threads each; a progress bar shows the
grid. Systems the registry marks missing get no directory (a missing directory reads MISSING).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from tempo.bench.registry import Point

CHILD_ENV = {
    "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads=2",
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
    "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0",
    "OMP_WAIT_POLICY": "PASSIVE",  # spinning OpenMP threads collapse (60x) on a busy machine
    "PYTHONOPTIMIZE": "1", "TOKENIZERS_PARALLELISM": "false",
    "RAY_DEDUP_LOGS": "0", "TF_CPP_MIN_LOG_LEVEL": "3",
}


@dataclass
class Outcome:
    """What happened to one point in this invocation."""

    point: Point
    status: str  # ran | skipped | missing | failed | timeout
    seconds: float = 0.0
    note: str = ""


def child_env() -> dict[str, str]:
    """Environment of a system process: threads, allocator knobs (§7.1), asserts off (§1.2)."""
    env = dict(os.environ)
    env.update(CHILD_ENV)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parents[2])] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def run_point(point: Point, results_root: Path, quick: bool, timeout_s: float) -> Outcome:
    """Launch one point in its own process; on timeout kill its process group."""
    out = results_root / point.rel_dir
    spec = {
        "name": out.name, "system": point.system.name, "kind": point.system.kind,
        "target": point.system.target,
        "cfg": {**point.cfg, "results_root": str(results_root)}, "out_dir": str(out),
        "quick": quick,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
        spec_path = f.name
    t0 = time.perf_counter()
    log = open(out.parent / f".{out.name}.log", "w") if out.parent.exists() else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-m", "tempo.bench.worker", spec_path],
                            env=child_env(), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        rc = proc.wait(timeout=timeout_s)
        status = "ran" if rc == 0 else "failed"
        note = "" if rc == 0 else f"exit code {rc}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.mkdir(parents=True, exist_ok=True)
        (out / "timed_out.txt").write_text(
            f"timed out after {timeout_s / 60:.1f} min; pid {proc.pid}; name {out.name}; "
            f"device cpu; started {time.ctime(time.time() - timeout_s)}\n")
        (out / "error.txt").write_text(f"timed out after {timeout_s:.0f} s\n")
        status, note = "timeout", f"{timeout_s:.0f}s"
    finally:
        if log is not subprocess.DEVNULL:
            log.close()
        os.unlink(spec_path)
    if status == "failed" and not (out / "error.txt").exists():
        out.mkdir(parents=True, exist_ok=True)
        (out / "error.txt").write_text(f"worker exited with {note} before writing results\n")
    return Outcome(point, status, time.perf_counter() - t0, note)


def run_grid(points: list[Point], results_root: Path, quick: bool, timeout_s: float,
             desc: str) -> list[Outcome]:
    """Run every point of a grid sequentially, honouring skip-if-exists."""
    outcomes: list[Outcome] = []
    bar = tqdm(points, desc=desc, unit="pt", file=sys.stderr, dynamic_ncols=True)
    for p in bar:
        out = results_root / p.rel_dir
        bar.set_postfix_str(out.name[:48])
        if out.exists():
            outcomes.append(Outcome(p, "skipped", note="results exist"))
            continue
        reason = p.system.missing_reason(p.cfg)
        if reason:
            outcomes.append(Outcome(p, "missing", note=reason))
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        outcomes.append(run_point(p, results_root, quick, timeout_s))
    return outcomes
