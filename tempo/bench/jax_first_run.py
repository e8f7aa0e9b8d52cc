"""The jax backend's first run against its steady state (issue 10: "the jax GPT-2 decoder's
first run at T=1024 is within 3x of its steady state"): jax compiles every kernel, region
and scan for each new input shape, so a first run that compiled per step (O(T)) would be
far slower than the runs after it.

`python -m tempo.bench.jax_first_run [--t 1024] [--attn causal] [--reps 2] [--e5]`
compiles the Tempo GPT-2-core decoder (E1's model, batch 4) on jax, then times its first
run and `reps` steady runs (wall and process CPU seconds) and counts XLA compilations in
each (`jax.monitoring`). `--e5` does the same for the E5 PPO program (64 envs x 64 steps,
4 iterations). Lines are appended to results/jax_first_run.txt with `uptime`.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import jax.monitoring

from tempo.bench.results import append_lines

_COMPILES = [0]


def _count(event: str, duration_secs: float, **_: str | int) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        _COMPILES[0] += 1


def _timed(fn: Callable[[], Any]) -> tuple[float, float, int]:
    """(wall s, process CPU s, XLA compilations) of one call."""
    n0, w0, c0 = _COMPILES[0], time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0, _COMPILES[0] - n0


def _report(name: str, compile_cpu: float, first: tuple[float, float, int],
            steady: list[tuple[float, float, int]]) -> str:
    w = min(s[0] for s in steady)
    c = min(s[1] for s in steady)
    return (f"{name}: compile {compile_cpu:.1f} CPU-s | first run {first[0]:.1f} s wall "
            f"{first[1]:.1f} CPU-s, {first[2]} XLA compilations | steady min {w:.1f} s wall "
            f"{c:.1f} CPU-s, {max(s[2] for s in steady)} compilations | first/steady "
            f"{first[0] / w:.2f}x wall, {first[1] / c:.2f}x CPU (goal <= 3x)")


def gpt2(seq_len: int, attn: str, reps: int) -> str:
    from tempo.bench.experiments.lm import MODEL
    from tempo.bench.memory import DeviceMemoryAccountant
    from tempo.bench.systems.gpt2_tempo import make_tempo_jax

    cfg = dict(MODEL, seq_len=seq_len, attn=attn, window=128, batch=4)
    dec = make_tempo_jax(cfg, DeviceMemoryAccountant())
    c0 = time.process_time()
    dec.compile()
    compile_cpu = time.process_time() - c0
    first = _timed(dec.run)
    steady = [_timed(dec.run) for _ in range(reps)]
    return _report(f"gpt2 jax {attn} T={seq_len}", compile_cpu, first, steady)


def e5(reps: int) -> str:
    from tempo.bench import e5_pair

    c = e5_pair._config(64, 64, 4)
    exe, compile_cpu = e5_pair.compile_tempo(c, "jax")
    first = _timed(exe.execute)
    steady = []
    for _ in range(reps):
        exe.reset()
        steady.append(_timed(exe.execute))
    return _report("e5 ppo jax B=64 T=64 4 iterations", compile_cpu, first, steady)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t", type=int, default=1024, help="GPT-2 decode steps")
    ap.add_argument("--attn", default="causal", help="causal or window")
    ap.add_argument("--reps", type=int, default=2, help="steady runs")
    ap.add_argument("--e5", action="store_true", help="the E5 PPO program instead")
    args = ap.parse_args()
    jax.monitoring.register_event_duration_secs_listener(_count)
    up = os.popen("uptime").read().strip()
    line = e5(args.reps) if args.e5 else gpt2(args.t, args.attn, args.reps)
    lines = [f"# {time.strftime('%Y-%m-%d %H:%M:%S')}  {up}", line,
             f"# after: {os.popen('uptime').read().strip()}"]
    print("\n".join(lines), flush=True)
    append_lines("jax_first_run.txt", lines)


if __name__ == "__main__":
    main()
