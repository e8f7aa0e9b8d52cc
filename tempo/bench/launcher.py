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


def _spec(point: Point, results_root: Path, quick: bool) -> dict[str, object]:
    out = (results_root / point.rel_dir).resolve()
    return {
        "name": out.name, "system": point.system.name, "kind": point.system.kind,
        "target": point.system.target,
        "cfg": {**point.cfg, "results_root": str(results_root.resolve())}, "out_dir": str(out),
        "quick": quick,
    }


def _launch(spec: dict[str, object], log_path: Path, timeout_s: float
            ) -> tuple[int | None, int]:
    """Run the worker on `spec`; returns (exit code or None on timeout, pid)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
        spec_path = f.name
    log = open(log_path, "w") if log_path.parent.exists() else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-m", "tempo.bench.worker", spec_path],
                            env=child_env(), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        return proc.wait(timeout=timeout_s), proc.pid
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return None, proc.pid
    finally:
        if not isinstance(log, int):
            log.close()
        os.unlink(spec_path)


def _timed_out(out: Path, timeout_s: float, pid: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "timed_out.txt").write_text(
        f"timed out after {timeout_s / 60:.1f} min; pid {pid}; name {out.name}; "
        f"device cpu; started {time.ctime(time.time() - timeout_s)}\n")
    (out / "error.txt").write_text(f"timed out after {timeout_s:.0f} s\n")


def run_point(point: Point, results_root: Path, quick: bool, timeout_s: float) -> Outcome:
    """Launch one point in its own process; on timeout kill its process group."""
    out = results_root / point.rel_dir
    t0 = time.perf_counter()
    rc, pid = _launch(_spec(point, results_root, quick), out.parent / f".{out.name}.log",
                      timeout_s)
    if rc is None:
        _timed_out(out, timeout_s, pid)
        status, note = "timeout", f"{timeout_s:.0f}s"
    else:
        status = "ran" if rc == 0 else "failed"
        note = "" if rc == 0 else f"exit code {rc}"
    if status == "failed" and not (out / "error.txt").exists():
        out.mkdir(parents=True, exist_ok=True)
        (out / "error.txt").write_text(f"worker exited with {note} before writing results\n")
    return Outcome(point, status, time.perf_counter() - t0, note)


def _collect(points: list[Point], results_root: Path, rc: int | None, pid: int,
             timeout_s: float, per: float) -> list[Outcome]:
    """Outcome of each point of a finished group process (writes the missing error files)."""
    outs: list[Outcome] = []
    for p in points:
        out = results_root / p.rel_dir
        if (out / "summary_results.json").exists():
            outs.append(Outcome(p, "ran", per))
        elif (out / "error.txt").exists():
            outs.append(Outcome(p, "failed", per, "error.txt"))
        elif rc is None:
            _timed_out(out, timeout_s, pid)
            outs.append(Outcome(p, "timeout", per, f"{timeout_s:.0f}s"))
        else:
            out.mkdir(parents=True, exist_ok=True)
            (out / "error.txt").write_text(f"worker exited with code {rc} before writing "
                                           "this point's results\n")
            outs.append(Outcome(p, "failed", per, f"exit code {rc}"))
    return outs


# Modules the `--quick` fork server imports once (never JAX: it must not be imported before a
# fork). Children forked from it are still one process per system.
PRELOAD = ("numpy", "torch", "tempo.bench.worker", "tempo.api", "tempo.bench.baselines.gpt2_torch",
           "tempo.bench.baselines.llama_torch", "tempo.bench.baselines.llama_hf",
           "tempo.bench.baselines.ppo_cleanrl", "tempo.bench.systems.gpt2_tempo",
           "tempo.memsave.bench", "tempo.memsave.probe",
           "transformers.models.llama.modeling_llama", "transformers.models.bert.modeling_bert")


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def _group_child(specs: list[dict[str, object]], log_path: str) -> None:
    """Body of one forked system process: output to its log, own session, run the points."""
    from tempo.bench.worker import run_batch

    os.setsid()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.exit(run_batch(specs))


class ForkServer:
    """A `multiprocessing` fork server that imported torch/transformers/Tempo once (and ran
    nothing). Each point (full grids) or each system's points (`--quick`) run in a fresh
    process forked from it, so no point pays the imports; JAX, Ray and rl_games are imported
    by the child that needs them."""

    def __init__(self) -> None:
        import multiprocessing as mp

        os.environ.update(child_env())  # inherited by the server and every forked child
        self.ctx = mp.get_context("forkserver")
        self.ctx.set_forkserver_preload(list(PRELOAD))

    def run(self, points: list[Point], results_root: Path, quick: bool, timeout_s: float
            ) -> list[Outcome]:
        specs = [_spec(p, results_root, quick) for p in points]
        first = results_root / points[0].rel_dir
        log = first.parent / (f".{points[0].system.name}-batch.log" if len(points) > 1
                              else f".{first.name}.log")
        t0 = time.perf_counter()
        proc = self.ctx.Process(target=_group_child, args=(specs, str(log)))
        proc.start()
        try:
            proc.join(timeout_s)
        finally:  # also on Ctrl-C / SIGTERM of the launcher: never leave the point running
            rc: int | None = proc.exitcode
            if proc.is_alive() and proc.pid is not None:
                _kill_group(proc.pid, signal.SIGTERM)
                proc.join(10)
                if proc.is_alive():
                    _kill_group(proc.pid, signal.SIGKILL)
                    proc.join()
                rc = None
        return _collect(points, results_root, rc, proc.pid or 0, timeout_s,
                        (time.perf_counter() - t0) / len(points))


def run_grid(points: list[Point], results_root: Path, quick: bool, timeout_s: float,
             desc: str, group: bool = False, fork: bool = True) -> list[Outcome]:
    """Run every point of a grid sequentially, honouring skip-if-exists. Each point runs in
    its own process forked from the preloaded fork server (`fork=False`: a fresh interpreter
    per point, paying the imports each time). With `group` (the `--quick` suite), the pending
    points of each system share one forked process."""
    outcomes: list[Outcome] = []
    pending: list[Point] = []
    for p in points:
        if (results_root / p.rel_dir).exists():
            outcomes.append(Outcome(p, "skipped", note="results exist"))
            continue
        reason = p.system.missing_reason(p.cfg)
        if reason:
            outcomes.append(Outcome(p, "missing", note=reason))
            continue
        pending.append(p)
    for p in pending:
        (results_root / p.rel_dir).parent.mkdir(parents=True, exist_ok=True)
    if group:
        groups: dict[tuple[str, str, str | None], list[Point]] = {}
        for p in pending:
            groups.setdefault((p.system.kind, p.system.name, p.system.target), []).append(p)
        bar = tqdm(total=len(pending), desc=desc, unit="pt", file=sys.stderr,
                   dynamic_ncols=True)
        group_server = ForkServer()
        for (_, name, _), pts in groups.items():
            bar.set_postfix_str(f"{name} x{len(pts)}")
            outcomes += group_server.run(pts, results_root, quick, timeout_s * len(pts))
            bar.update(len(pts))
        bar.close()
        return outcomes
    bar = tqdm(pending, desc=desc, unit="pt", file=sys.stderr, dynamic_ncols=True)
    server = ForkServer() if fork and pending else None
    for p in bar:
        bar.set_postfix_str((results_root / p.rel_dir).name[:48])
        if (results_root / p.rel_dir).exists():  # skip rule, re-checked at launch time
            outcomes.append(Outcome(p, "skipped", note="results appeared meanwhile"))
            continue
        if server is not None:
            outcomes += server.run([p], results_root, quick, timeout_s)
        else:
            outcomes.append(run_point(p, results_root, quick, timeout_s))
    return outcomes
