"""Per-kernel-call overhead outside the kernels (ARCHITECTURE §7 asks for a few hundred ns).

`python -m tempo.bench.call_overhead [ppo] [gpt2] [--t 256]` compiles the PPO-shaped
program (64 envs x 64 steps, 2x64 MLP, 3 iterations) and the E1 GPT-2-core decoder and
reports, per kernel call, in thread CPU time (robust to other processes on a shared
machine; one torch thread):

- stub: every kernel replaced by a function returning its recorded output, so the run
  is only the generated code, stores and frees (the stub calls' own cost, calibrated,
  subtracted); robust to a loaded machine, unlike the next;
- outside: total run time minus the time measured inside the kernels (the timing
  wrapper's own cost is calibrated and subtracted).

As a scale for a loaded machine it also prints the CPU time of one Python dict write
`d[(i,)] = i` (about 60 ns on an idle core). Results are appended to
results/call_overhead.txt.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import torch

from tempo.bench.results import append_lines

_clock = time.thread_time


def _kernel_names(exe: Any) -> tuple[dict[str, Any], list[str]]:
    ns = exe.generated.namespace
    return ns, [k for k in ns if k.startswith("k") and k[1:].isdigit()]


def dict_write_ns(n: int = 200_000) -> float:
    d: dict[tuple[int], int] = {}
    t = _clock()
    for i in range(n):
        d[(i,)] = i
    return (_clock() - t) / n * 1e9


def measure(exe: Any, reps: int = 5) -> dict[str, float]:
    """Kernel calls per run, total and kernel ms (min over reps), µs per call outside."""
    ns, keys = _kernel_names(exe)
    orig = {k: ns[k] for k in keys}
    acc = [0.0, 0.0]
    rec: dict[str, Any] = {}

    def wrap(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*a: Any) -> Any:
            t = _clock()
            r = f(*a)
            acc[0] += _clock() - t
            acc[1] += 1
            rec.setdefault(name, r)
            return r
        return timed

    empty = wrap("", lambda: None)
    for _ in range(20_000):
        empty()
    cal = acc[0] / acc[1]
    stub_call = (lambda v: lambda *a: v)(None)  # what one stubbed kernel call costs
    t = _clock()
    for _ in range(20_000):
        stub_call(cal, cal, cal)
    stub_cal = (_clock() - t) / 20_000
    plain, inside, stub = [], [], []
    calls = 0.0
    for _ in range(reps):
        exe.reset()
        t = _clock()
        exe.execute()
        plain.append(_clock() - t)
        for k in keys:
            ns[k] = wrap(k, orig[k])
        exe.reset()
        acc[:] = [0.0, 0.0]
        exe.execute()
        inside.append(acc[0] - cal * acc[1])
        calls = acc[1]
        for k in keys:
            ns[k] = (lambda v: lambda *a: v)(rec[k]) if k in rec else orig[k]
        exe.reset()
        t = _clock()
        exe.execute()
        stub.append(_clock() - t)
        for k in keys:
            ns[k] = orig[k]
    tot, kern = min(plain), min(inside)
    return {"calls": calls, "total_ms": tot * 1e3, "kernel_ms": kern * 1e3,
            "stub_us": (min(stub) / calls - stub_cal) * 1e6,
            "outside_us": (tot - kern) / calls * 1e6}


def build(which: str, steps: int) -> Any:
    if which == "ppo":
        from tempo.bench.compile_programs import ppo_shaped

        p = ppo_shaped(False, 64, 64, iters=3)
        return p.ctx.compile(p.bounds)
    from tempo.bench.memory import DeviceMemoryAccountant
    from tempo.bench.systems.gpt2_tempo import TempoGpt2Decoder

    dec = TempoGpt2Decoder({"seq_len": steps}, DeviceMemoryAccountant())
    dec.compile()
    return dec.exe


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("programs", nargs="*", default=["ppo", "gpt2"], help="ppo and/or gpt2")
    ap.add_argument("--t", type=int, default=256, help="GPT-2 decode steps")
    args = ap.parse_args()
    bad = [p for p in args.programs if p not in ("ppo", "gpt2")]
    if bad:
        ap.error(f"unknown program {bad[0]!r}: choose ppo or gpt2")
    torch.set_num_threads(1)
    lines = [f"# {time.strftime('%Y-%m-%d %H:%M:%S')}  {os.popen('uptime').read().strip()}",
             f"dict write {dict_write_ns():.0f} ns CPU (the machine's speed now)"]
    print(lines[0], "\n" + lines[1], flush=True)
    for which in args.programs:
        print(f"{which}: compiling ...", flush=True)
        m = measure(build(which, args.t))
        line = (f"{which}: {m['calls']:.0f} kernel calls/run, total {m['total_ms']:.1f} ms, "
                f"kernels {m['kernel_ms']:.1f} ms CPU; outside kernels {m['outside_us']:.2f} "
                f"us/call, generated code + stores alone {m['stub_us']:.2f} us/call")
        print(line, flush=True)
        lines.append(line)
    append_lines("results/call_overhead.txt", lines)


if __name__ == "__main__":
    main()
