"""Command line: `python -m tempo.bench <experiment|all|report|list> [--quick] [--systems a,b]
[--results DIR]`.

argparse, not python-fire: fire is installable but is not in the `dev` extra that `make test`
installs, and every runner still gets `--help`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from tempo.bench.launcher import Outcome, run_grid
from tempo.bench.plots import plot_experiment
from tempo.bench.registry import Experiment, load_all, resolve
from tempo.bench.report import write_report
from tempo.bench.results import results_path

ORDER = ("gpt2_tpt", "gpt2_block_size", "gpt2_mem", "llama_tpt", "llama_compile",
         "ppo_small_to_med", "ppo_large_obs", "reinforce_sched", "memsave")


def _dirs(args: argparse.Namespace) -> tuple[Path, Path]:
    """Results root and its plots dir: `results/` (full) or `results/quick` (--quick) by
    default, or DIR with --results; plots always go to ROOT/plots, so every output of a run
    stays under its results root."""
    root = Path(args.results) if args.results else results_path(
        "quick" if args.quick else "")
    return root, root / "plots"


def _parser() -> argparse.ArgumentParser:
    exps = load_all()
    p = argparse.ArgumentParser(
        prog="python -m tempo.bench",
        description="Tempo evaluation suite (BENCHMARKS.md). Runs each system of an experiment's "
                    "grid in its own subprocess (2 threads), skips points whose results "
                    "directory exists, then writes plots and REPORT.md.")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="command")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--quick", action="store_true", help="tiny grids (seconds per experiment)")
        sp.add_argument("--results", default=None, metavar="DIR",
                        help="results root (default results/, or results/quick with --quick)")

    for name in ORDER:
        e = exps[name]
        sp = sub.add_parser(name, aliases=list(e.aliases), help=e.title,
                            description=f"{e.title}. Claim: {e.claim} Systems: "
                                        + ", ".join(s.name for s in e.systems))
        common(sp)
        sp.add_argument("--systems", default=None, metavar="a,b",
                        help="only these systems (default: all registered)")
        sp.set_defaults(exps=[name])
    sp = sub.add_parser("all", help="every experiment in order, then the report")
    common(sp)
    sp.add_argument("--systems", default=None, metavar="a,b", help="only these systems")
    sp.set_defaults(exps=list(ORDER))
    sp = sub.add_parser("report", help="(re)write plots and REPORT.md from existing results")
    common(sp)
    sp.set_defaults(exps=list(ORDER), systems=None, report_only=True)
    sp = sub.add_parser("compile", help="compile time of the issue-9 programs (CPU s) and their "
                        "iteration time; --before also measures isl's own scheduler")
    common(sp)
    sp.add_argument("--before", action="store_true",
                    help="also compile with isl's scheduler (the previous path) and time both "
                         "schedules' iterations interleaved in one process")
    sp.add_argument("--isl-cpu-limit", type=float, default=120.0, metavar="S",
                    help="CPU seconds allowed to each isl compile with --before (default 120)")
    sp.add_argument("--only", default=None, metavar="a,b",
                    help="only programs whose name starts with one of these (e.g. mlp,gru)")
    sp.set_defaults(exps=[], systems=None, compile_only=True)
    sp = sub.add_parser("list", help="list experiments and their systems")
    sp.set_defaults(exps=[], systems=None, list_only=True, quick=False, results=None)
    return p


def _list() -> None:
    for name in ORDER:
        e = resolve(name)
        alias = ",".join(e.aliases)
        print(f"{name} ({alias}): {e.title}")
        for s in e.systems:
            why = s.missing_reason()
            print(f"    {s.name:14s} {'MISSING: ' + why if why else s.target}")


def _summary(name: str, n: int, outs: list[Outcome], t0: float,
             load0: tuple[float, float, float]) -> None:
    counts: dict[str, int] = {}
    for o in outs:
        counts[o.status] = counts.get(o.status, 0) + 1
    load1 = os.getloadavg()
    print(f"[{name}] {n} points in {time.perf_counter() - t0:.1f}s (load avg 1/5/15 min "
          f"{load0[0]:.2f}/{load0[1]:.2f}/{load0[2]:.2f} -> {load1[0]:.2f}/{load1[1]:.2f}/"
          f"{load1[2]:.2f}): " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
          file=sys.stderr)


def run_experiments(exps: list[Experiment], root: Path, plots: Path, quick: bool,
                    systems: set[str] | None) -> list[Path]:
    """Run grids, then plot; returns the plot paths."""
    made: list[Path] = []
    if quick:  # one process per system across all experiments: imports are paid once
        pts = [p for e in exps for p in e.grid(quick)
               if systems is None or p.system.name in systems]
        t0, load0 = time.perf_counter(), os.getloadavg()
        outs = run_grid(pts, root, quick, max(e.timeout_s for e in exps), desc="quick",
                        group=True)
        _summary("quick suite", len(pts), outs, t0, load0)
        return [p for e in exps for p in plot_experiment(e, root, plots, quick)]
    for e in exps:
        pts = [p for p in e.grid(quick) if systems is None or p.system.name in systems]
        t0, load0 = time.perf_counter(), os.getloadavg()
        outs = run_grid(pts, root, quick, e.timeout_s, desc=e.name)
        _summary(e.name, len(pts), outs, t0, load0)
        made += plot_experiment(e, root, plots, quick)
    return made


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds the launcher, which kills the running point


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    args = _parser().parse_args(argv)
    if getattr(args, "list_only", False):
        _list()
        return 0
    root, plots = _dirs(args)
    t0, load0 = time.perf_counter(), os.getloadavg()
    if getattr(args, "compile_only", False):
        from tempo.bench.compile_bench import run as run_compile

        only = set(args.only.split(",")) if args.only else None
        out = run_compile(root, args.quick, args.before, args.isl_cpu_limit, only)
        rep = write_report(root, [resolve(n) for n in ORDER], args.quick)
        print(f"results: {out}; plot: {plots / 'compile_time.png'}; report: {rep}",
              file=sys.stderr)
        return 0
    exps = [resolve(n) for n in args.exps]
    systems = set(args.systems.split(",")) if args.systems else None
    if getattr(args, "report_only", False):
        made = [p for e in exps for p in plot_experiment(e, root, plots, args.quick)]
    else:
        made = run_experiments(exps, root, plots, args.quick, systems)
    rep = write_report(root, [resolve(n) for n in ORDER], args.quick)
    load1 = os.getloadavg()
    print(f"plots: {len(made)} in {plots}; report: {rep}; wall {time.perf_counter() - t0:.0f} s"
          f" (load avg 1/5/15 min {load0[0]:.2f}/{load0[1]:.2f}/{load0[2]:.2f} at start, "
          f"{load1[0]:.2f}/{load1[1]:.2f}/{load1[2]:.2f} at end)", file=sys.stderr)
    return 0
