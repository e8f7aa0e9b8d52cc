"""E5's base point measured in one process: Tempo (torch, jax) against CleanRL-style PPO,
runs interleaved (BENCHMARKS.md: on a shared machine never trust one absolute time).

`python -m tempo.bench.e5_pair [--B 64] [--T 64] [--iters 4] [--reps 5]
[--backends torch,jax] [--scaling]` compiles the artifact PPO program (tempo/bench/systems/
ppo_tempo.py: trivial env, obs 3x4x4, 2x64 MLP, Adam) on each backend, times its compile in
CPU seconds and its first (warm-up) run, then alternates one untracked run of each Tempo
backend with one CleanRL-style and one CleanRL(C) run (one torch thread) and prints min and
median ms per iteration (wall, and the process CPU time, which a loaded machine inflates
less), the ratios to CleanRL-style, the per-round ratios (each Tempo run over the
CleanRL-style run of its round: load drift between rounds cancels) and `uptime` before
and after.

It also counts kernel calls per iteration: Tempo's generated kernel calls (split into the
calls per env step of ops inside the t loop and the calls of the rest, per iteration) and
CleanRL's torch function calls of one iteration. `--scaling` repeats Tempo torch's count at
B, T in {16, 64} to show the learning step's calls do not grow with B or T. Lines are
appended to results/e5/e5_pair.txt.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from tempo.bench.baselines import ppo_cleanrl
from tempo.bench.baselines.ppo_cleanrl import DEFAULTS
from tempo.bench.clock import cpu_seconds
from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.results import append_lines
from tempo.bench.systems import ppo_tempo
from tempo.bench.timing import StatsLogger


def _config(B: int, T: int, iters: int) -> dict[str, Any]:
    c = dict(DEFAULTS)
    c.update(num_envs=B, ep_len=T, iterations=iters)
    return c


def compile_tempo(c: dict[str, Any], backend: str) -> tuple[Any, float]:
    """The E5 Tempo program, compiled untracked (as ppo_tempo times it); compile CPU-s.
    The executable keeps the program's step dim as `e5_t` (for counting calls per step)."""
    ctx, bounds = ppo_tempo._program(c, backend, StatsLogger(), {})
    t0 = cpu_seconds()
    exe = ctx.compile(bounds)
    cpu = cpu_seconds() - t0
    exe.e5_t = ctx.variables_and_bounds[2][0]
    return exe, cpu


def count_calls(exe: Any, c: dict[str, Any]) -> tuple[float, float, float]:
    """(kernel calls per iteration, calls per env step inside a t loop, calls per iteration
    outside any t loop) of one run: every generated kernel is wrapped by a counter."""
    ns = exe.generated.namespace
    keys = [k for k in ns if k.startswith("k") and k[1:].isdigit()]
    orig = {k: ns[k] for k in keys}
    cnt: collections.Counter[str] = collections.Counter()

    def wrap(k: str, f: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*a: Any) -> Any:
            cnt[k] += 1
            return f(*a)
        return counted

    for k in keys:
        ns[k] = wrap(k, orig[k])
    try:
        exe.reset()
        exe.execute()
    finally:
        for k in keys:
            ns[k] = orig[k]
    in_t = sum(n for k, n in cnt.items()
               if exe.e5_t in exe.sdg.ops[int(k[1:])].domain.variables)
    out_t = sum(cnt.values()) - in_t
    iters, T = c["iterations"], c["ep_len"]
    return (sum(cnt.values()) / iters, in_t / (iters * T), out_t / iters)


class _TorchCalls(torch.overrides.TorchFunctionMode):
    """Counts every torch function call (CleanRL's eager 'kernel calls')."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        self.n += 1
        return func(*args, **(kwargs or {}))


def cleanrl_calls(c: dict[str, Any], caching: bool) -> float:
    """Torch function calls of one CleanRL-style iteration (two runs' difference: no setup)."""
    counts = []
    for iters in (1, 2):
        mode = _TorchCalls()
        with mode:
            ppo_cleanrl.train(dict(c, iterations=iters), DeviceMemoryAccountant(),
                              StatsLogger(), caching=caching)
        counts.append(mode.n)
    return float(counts[1] - counts[0])


def _cleanrl_run(c: dict[str, Any], caching: bool) -> None:
    ppo_cleanrl.train(c, DeviceMemoryAccountant(), StatsLogger(), caching=caching)


def _uptime() -> str:
    return os.popen("uptime").read().strip()


def run(B: int, T: int, iters: int, reps: int, backends: list[str]) -> list[str]:
    """Compile, warm up and time interleaved; the report's lines."""
    c = _config(B, T, iters)
    lines = [f"# {time.strftime('%Y-%m-%d %H:%M:%S')}  {_uptime()}",
             f"E5 B={B} T={T}, {iters} iterations per run, {reps} interleaved repeats, "
             f"1 torch thread"]
    print("\n".join(lines), flush=True)
    exes: dict[str, Any] = {}
    for be in backends:
        exe, cpu = compile_tempo(c, be)
        exes[be] = exe
        t = time.perf_counter()
        exe.execute()  # warm-up: jax compiles its kernels and regions here
        first = (time.perf_counter() - t) / iters
        calls, per_step, rest = count_calls(exe, c)
        lines.append(f"tempo-{be}: compile {cpu:.2f} CPU-s, first run {first:.2f} s/iter, "
                     f"{calls:.0f} kernel calls/iter ({per_step:.2f} per env step + "
                     f"{rest:.0f} outside the t loop)")
        print(lines[-1], flush=True)
    for name, caching in (("cleanrl", False), ("cleanrlcache", True)):
        lines.append(f"{name}: {cleanrl_calls(c, caching):.0f} torch calls/iter")
        print(lines[-1], flush=True)
    names = [*exes, "cleanrl", "cleanrlcache"]
    times: dict[str, list[float]] = {k: [] for k in names}
    cpu_ms: dict[str, list[float]] = {k: [] for k in names}

    def timed(name: str, fn: Callable[[], Any]) -> None:
        t, c0 = time.perf_counter(), time.process_time()  # (ns clock: os.times ticks 10 ms)
        fn()
        cpu_ms[name].append((time.process_time() - c0) / iters * 1e3)
        times[name].append((time.perf_counter() - t) / iters * 1e3)

    for _ in range(reps):
        for be, exe in exes.items():
            exe.reset()
            timed(be, exe.execute)
        for name, caching in (("cleanrl", False), ("cleanrlcache", True)):
            timed(name, functools.partial(_cleanrl_run, c, caching))
    ref, ref_cpu = times["cleanrl"], cpu_ms["cleanrl"]
    for k in names:
        v, cv = times[k], cpu_ms[k]
        label = f"tempo-{k}" if k in exes else k
        lines.append(f"{label:13s} wall min {min(v):7.2f} med {statistics.median(v):7.2f} "
                     f"ms/iter (/cleanrl min {min(v) / min(ref):.2f} med "
                     f"{statistics.median(v) / statistics.median(ref):.2f}) | process CPU min "
                     f"{min(cv):7.2f} ms/iter (/cleanrl {min(cv) / min(ref_cpu):.2f})")
        print(lines[-1], flush=True)
    for k in exes:  # each round's Tempo run over the CleanRL-style run beside it
        pairs = sorted(a / b for a, b in zip(times[k], ref))
        q = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else pairs * 3
        lines.append(f"tempo-{k} / cleanrl per round (wall, {len(pairs)} rounds): median "
                     f"{statistics.median(pairs):.3f}, quartiles {q[0]:.3f}-{q[2]:.3f}, "
                     f"max {pairs[-1]:.3f}")
        print(lines[-1], flush=True)
    lines.append("process CPU medians (ms/iter, /cleanrl): " + ", ".join(
        f"{k} {statistics.median(cpu_ms[k]):.2f} "
        f"({statistics.median(cpu_ms[k]) / statistics.median(ref_cpu):.2f})" for k in names))
    print(lines[-1], flush=True)
    lines.append(f"# after: {_uptime()}")
    print(lines[-1], flush=True)
    return lines


def scaling(iters: int) -> list[str]:
    """Tempo torch's kernel calls at B, T in {16, 64}: constant per env step and outside."""
    lines = []
    for B, T in ((16, 16), (64, 16), (16, 64), (64, 64)):
        c = _config(B, T, iters)
        exe, _ = compile_tempo(c, "torch")
        calls, per_step, rest = count_calls(exe, c)
        lines.append(f"tempo-torch B={B} T={T}: {calls:.0f} kernel calls/iter, "
                     f"{per_step:.2f} per env step, {rest:.0f} outside the t loop")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--B", type=int, default=64, help="envs")
    ap.add_argument("--T", type=int, default=64, help="steps per episode")
    ap.add_argument("--iters", type=int, default=4, help="iterations per timed run")
    ap.add_argument("--reps", type=int, default=5, help="interleaved runs of each system")
    ap.add_argument("--backends", default="torch,jax", help="Tempo backends")
    ap.add_argument("--scaling", action="store_true",
                    help="also count Tempo torch's calls at B, T in {16, 64}")
    args = ap.parse_args()
    torch.set_num_threads(1)
    lines = run(args.B, args.T, args.iters, args.reps, args.backends.split(","))
    if args.scaling:
        lines += scaling(2)
    append_lines("e5/e5_pair.txt", lines)


if __name__ == "__main__":
    main()
