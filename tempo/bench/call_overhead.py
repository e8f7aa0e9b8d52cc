"""Per-kernel-call overhead outside the kernels (ARCHITECTURE §7 asks for a few hundred ns).

`python -m tempo.bench.call_overhead [ppo] [gpt2] [--t 256]` compiles the PPO-shaped
program (64 envs x 64 steps, 2x64 MLP, 3 iterations) and the E1 GPT-2-core decoder and
reports, in thread CPU time (robust to other processes on a shared machine; one torch
thread):

- outside: total run time minus the time inside the backend kernels, per call. A kernel
  is one op's kernel (`tempo.prims`), so a fused region's body function, its error
  wrapper and everything the generated code does between calls count as outside. The
  time inside is measured on a twin executor whose leaf kernels are wrapped in a timer
  (the timer's own cost calibrated and subtracted); the total on the plain executor.
  Reported per leaf kernel call and per call the generated code makes (a region is one);
- stub: every call of the generated code replaced by a function returning its recorded
  output, so the run is only the generated code, stores and frees (the stub calls' own
  cost, calibrated, subtracted); robust to a loaded machine, unlike the first.

As a scale for a loaded machine it also prints the CPU time of one Python dict write
`d[(i,)] = i` (about 60 ns on an idle core; ~1 µs on this shared VM). Results are
appended to results/call_overhead.txt.
"""

from __future__ import annotations

import argparse
import functools
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


def _timer(acc: list[float]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A wrapper adding each call's thread time to acc[0] and counting it in acc[1]."""
    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*a: Any) -> Any:
            t = _clock()
            r = f(*a)
            acc[0] += _clock() - t
            acc[1] += 1
            return r
        return timed
    return wrap


def _calibrate(wrap: Callable[[Callable[..., Any]], Callable[..., Any]],
               acc: list[float]) -> float:
    """What the timer adds inside its own window per call (subtracted from kernel time)."""
    empty = wrap(lambda: None)
    acc[:] = [0.0, 0.0]
    for _ in range(20_000):
        empty()
    return acc[0] / acc[1]


def timed_twin(make: Callable[[], Any], acc: list[float]) -> Any:
    """`make()` with every leaf kernel (not a fused region: its members are the leaves)
    timed into `acc`; fused regions are rebuilt for it (their body cache is set aside)."""
    from tempo.core.ops_region import RegionOp
    from tempo.runtime import regions
    from tempo.runtime.backends.torch import TorchBackend

    wrap = _timer(acc)
    orig_kernel, cache = TorchBackend.kernel, dict(regions._CACHE)

    def kernel(self: Any, op: Any) -> Any:
        k = orig_kernel(self, op)
        return k if isinstance(op, RegionOp) else wrap(k)

    regions._CACHE.clear()
    TorchBackend.kernel = kernel  # type: ignore[method-assign]  # bench-only patch
    try:
        return make()
    finally:
        TorchBackend.kernel = orig_kernel  # type: ignore[method-assign]  # restored
        regions._CACHE.clear()
        regions._CACHE.update(cache)


def measure(make: Callable[[], Any], reps: int = 5) -> dict[str, float]:
    """Calls per run (of the generated code and of leaf kernels), total and kernel ms (min
    over reps), µs per call outside the kernels, and the stubbed run's µs per call."""
    exe = make()
    acc = [0.0, 0.0]
    twin = timed_twin(make, acc)
    cal = _calibrate(_timer(acc), acc)
    ns, keys = _kernel_names(exe)
    orig = {k: ns[k] for k in keys}
    rec: dict[str, Any] = {}
    count = [0.0, 0.0]

    def recorder(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
        def call(*a: Any) -> Any:
            r = f(*a)
            count[1] += 1
            rec.setdefault(name, r)
            return r
        return call

    stub_call = (lambda v: lambda *a: v)(None)  # what one stubbed kernel call costs
    t = _clock()
    for _ in range(20_000):
        stub_call(cal, cal, cal)
    stub_cal = (_clock() - t) / 20_000
    for k in keys:
        ns[k] = recorder(k, orig[k])
    exe.reset()
    exe.execute()  # records each call's output (for the stubs) and counts the calls
    calls = count[1]
    plain, inside, stub = [], [], []
    leaf_calls = 0.0
    for _ in range(reps):
        for k in keys:
            ns[k] = orig[k]
        exe.reset()
        t = _clock()
        exe.execute()
        plain.append(_clock() - t)
        twin.reset()
        acc[:] = [0.0, 0.0]
        twin.execute()
        inside.append(acc[0] - cal * acc[1])
        leaf_calls = acc[1]
        for k in keys:
            ns[k] = (lambda v: lambda *a: v)(rec[k]) if k in rec else orig[k]
        exe.reset()
        t = _clock()
        exe.execute()
        stub.append(_clock() - t)
    for k in keys:
        ns[k] = orig[k]
    exe.reset()
    tot, kern = min(plain), min(inside)
    return {"calls": calls, "leaf_calls": leaf_calls, "total_ms": tot * 1e3,
            "kernel_ms": kern * 1e3, "stub_us": (min(stub) / calls - stub_cal) * 1e6,
            "outside_us": (tot - kern) / calls * 1e6,
            "outside_leaf_us": (tot - kern) / leaf_calls * 1e6}


def build(which: str, steps: int) -> Any:
    """The compiled program: `ppo` or the E1 GPT-2 decoder (`steps` tokens, tracked)."""
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
        m = measure(functools.partial(build, which, args.t))
        line = (f"{which}: {m['calls']:.0f} calls/run ({m['leaf_calls']:.0f} leaf kernel "
                f"calls), total {m['total_ms']:.1f} ms, kernels {m['kernel_ms']:.1f} ms CPU; "
                f"outside kernels {m['outside_us']:.2f} us/call "
                f"({m['outside_leaf_us']:.2f} per leaf call), generated code + stores alone "
                f"{m['stub_us']:.2f} us/call")
        print(line, flush=True)
        lines.append(line)
    append_lines("results/call_overhead.txt", lines)


if __name__ == "__main__":
    main()
