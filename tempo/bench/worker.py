"""The per-point subprocess: `python -m tempo.bench.worker SPEC.json`.

Each system runs in its own interpreter so that RSS, thread settings and allocator state are its
own. Imports happen first, RSS is read, then the system runs under the chosen protocol; any
exception is written to `error.txt` (message + traceback) as §1.2 prescribes.
"""

from __future__ import annotations

import gc
import importlib
import json
import math
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

from tempo.bench.memory import DeviceMemoryAccountant, current_rss, peak_rss, reset_peak_rss
from tempo.bench.monitor import Monitor
from tempo.bench.timing import StatsLogger, TimingPolicy, time_decoder, write_config

THREADS = 2


def _round(v: Any) -> Any:
    """Round floats to 6 significant digits (2 decimals would erase per-token times)."""
    if isinstance(v, float) and math.isfinite(v) and v != 0.0:
        return round(v, 5 - int(math.floor(math.log10(abs(v)))))
    return v


def _limit_threads() -> None:
    """Two threads in every system (torch here; BLAS/XLA through the environment)."""
    if "torch" in sys.modules or importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(THREADS)
        try:
            torch.set_num_interop_threads(THREADS)
        except RuntimeError:
            pass


def _on_signal(out: Path) -> Any:
    def handler(signum: int, frame: Any) -> None:
        (out / "error.txt").write_text(
            f"received termination signal {signum}. Likely timeout due to memory\n")
        os._exit(1)

    return handler


def _run_decode(fn: Any, cfg: dict[str, Any], out: Path, quick: bool,
                acct: DeviceMemoryAccountant) -> dict[str, Any]:
    runner = fn(cfg, acct)
    record = bool(cfg.get("record_memory", False))
    acct.recording = record

    def stop_recording() -> None:
        acct.recording = False

    with Monitor(str(out / "monitor.csv"), acct, hz=1.0 if record else 10.0) as mon:
        res = time_decoder(runner, TimingPolicy.for_mode(quick), stop_recording)
    if record:
        acct.write_timeline(str(out / "mem_timeline.csv"))
    res.update(mon.means())
    return res


def _run_rl(fn: Any, cfg: dict[str, Any], out: Path, quick: bool,
            acct: DeviceMemoryAccountant) -> dict[str, Any]:
    logger = StatsLogger()
    write_config(str(out / "log.config"), cfg)
    acct.recording = bool(cfg.get("record_memory", False))
    with Monitor(str(out / "monitor.csv"), acct, hz=10.0) as mon:
        extra = fn(cfg, acct, logger) or {}
    logger.finish(str(out / "log.csv"))
    if acct.recording:
        acct.write_timeline(str(out / "mem_timeline.csv"))
    rets = [r["mean_episode_return"] for _, r in sorted(logger.rows.items())
            if "mean_episode_return" in r]
    res: dict[str, Any] = {
        "iter_mean": logger.iter_mean(), "n_iterations": len(logger.rows),
        "first_return": rets[0] if rets else None, "last_return": rets[-1] if rets else None,
    }
    res.update(mon.means())
    res.update(extra)
    return res


def _import_target(target: str) -> Any:
    mod_name, fn_name = target.split(":")
    return getattr(importlib.import_module(mod_name), fn_name)


def run_spec(spec: dict[str, Any]) -> int:
    """Run one point; returns the process exit code (0 ok, 1 on an exception).

    The process works inside the point's directory, so relative paths a system writes (e.g. a
    compiler's run folder) land under the results root. Peak RSS is VmHWM reset after the
    imports, minus the RSS at that moment (so several points can share one process)."""
    out = Path(spec["out_dir"]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _on_signal(out))
    signal.signal(signal.SIGINT, _on_signal(out))
    cwd = os.getcwd()
    try:
        fn = _import_target(spec["target"])
        _limit_threads()
        os.chdir(out)
        cfg = dict(spec["cfg"])
        gc.collect()
        reset = reset_peak_rss()
        rss0 = current_rss()
        load0 = os.getloadavg()[0]
        acct = DeviceMemoryAccountant(cap_bytes=cfg.get("cap_bytes"))
        kind, quick = spec["kind"], bool(spec["quick"])
        if kind == "decode":
            res = _run_decode(fn, cfg, out, quick, acct)
        elif kind == "rl":
            res = _run_rl(fn, cfg, out, quick, acct)
        elif kind == "compile":  # compile only: the function returns its timings
            res = dict(fn(cfg))
        else:
            res = dict(fn(str(out), quick) or {})
        res.update({
            "name": spec["name"], "system": spec["system"],
            "rss_after_imports_bytes": rss0, "peak_rss_bytes": peak_rss() - rss0,
            "peak_rss_source": "VmHWM reset after imports" if reset else "ru_maxrss",
            "peak_device_bytes": acct.peak, "device_cap_bytes": acct.cap_bytes,
            "threads": THREADS, "loadavg_1min_start": load0,
            "loadavg_1min_end": os.getloadavg()[0],
            "points_in_process": int(spec.get("points_in_process", 1)),
        })
        with open(out / "summary_results.json", "w") as f:
            json.dump({k: _round(v) for k, v in res.items()}, f, indent=1, default=str)
        return 0
    except BaseException as e:  # noqa: BLE001 - every failure must land in error.txt
        msg = f"Exception: {type(e).__name__}: {e}\n\n{traceback.format_exc()}"
        (out / "error.txt").write_text(msg)
        return 1
    finally:
        os.chdir(cwd)


def run_batch(specs: list[dict[str, Any]]) -> int:
    """`--quick` only: several points of one system in one process (imports paid once). Each
    point still gets its own directory, accountant, monitor and RSS peak; a failing point
    writes its `error.txt` and the next one runs. Exit code: number of failed points."""
    failed = 0
    for spec in specs:
        failed += run_spec({**spec, "points_in_process": len(specs)})
        gc.collect()
    return min(failed, 100)


def main(argv: list[str] | None = None) -> int:
    """Usage: python -m tempo.bench.worker SPEC.json (written by the launcher)."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(main.__doc__)
        return 0
    with open(args[0]) as f:
        spec = json.load(f)
    return run_batch(spec["batch"]) if "batch" in spec else run_spec(spec)


if __name__ == "__main__":
    raise SystemExit(main())
