"""Per-kernel-call overhead outside the kernels (ARCHITECTURE §7 asks for a few hundred ns).

`python -m tempo.bench.call_overhead [ppo] [gpt2] [--t 256]` compiles the PPO-shaped
program (64 envs x 64 steps, 2x64 MLP, 3 iterations) and the E1 GPT-2-core decoder and
reports, in thread CPU time (robust to other processes on a shared machine; one torch
thread):

- outside: the run with every backend kernel stubbed. A kernel is one op's kernel
  (`tempo.prims`), so a fused region's body function and everything the generated code
  does between calls (stores, frees, charges, guards) count as outside. A twin executor's
  leaf kernels first run and keep their first output, then return it at once; the
  stubs' own cost (calibrated) is subtracted. Reported per call the generated code
  makes (a region is one) and per leaf kernel call. Tensor allocation and freeing
  happen inside the kernels, so they count there (the baselines pay them too);
- stub: the same with the generated code's calls stubbed (regions whole): only the
  generated code, stores and frees.

Both subtract nothing measured under load from something else measured under load (a
timer around each kernel, tried first, was off by its calibration error times thousands
of calls at load 20). As a scale for a loaded machine it also prints the CPU time of one
Python dict write `d[(i,)] = i` (about 60 ns on an idle core; ~1 µs on this shared VM).
Results are appended to results/call_overhead.txt.
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


def _stub_cost(n: int = 20_000) -> float:
    """Seconds one call of a stub (a function returning a kept value) costs."""
    stub = (lambda v: lambda *a: v)(None)
    t = _clock()
    for _ in range(n):
        stub(n, n, n)
    return (_clock() - t) / n


def leaf_twin(make: Callable[[], Any], state: list[int]) -> Any:
    """`make()` with every leaf kernel (an op's kernel; a fused region's members are
    leaves, the region is not) wrapped: with state[0] == 0 it runs and keeps its first
    output, with 1 it returns that output at once (a stub); state[1] counts calls. Fused
    regions are rebuilt for the twin (their body cache is set aside)."""
    from tempo.core.ops_region import RegionOp
    from tempo.runtime import regions
    from tempo.runtime.backends.torch import TorchBackend

    orig_kernel, cache = TorchBackend.kernel, dict(regions._CACHE)

    def leaf(f: Callable[..., Any]) -> Callable[..., Any]:
        kept: list[Any] = []

        def call(*a: Any) -> Any:
            state[1] += 1
            if state[0] and kept:
                return kept[0]
            r = f(*a)
            if not kept:
                kept.append(r)
            return r
        return call

    def kernel(self: Any, op: Any) -> Any:
        k = orig_kernel(self, op)
        return k if isinstance(op, RegionOp) else leaf(k)

    regions._CACHE.clear()
    TorchBackend.kernel = kernel  # type: ignore[method-assign]  # bench-only patch
    try:
        return make()
    finally:
        TorchBackend.kernel = orig_kernel  # type: ignore[method-assign]  # restored
        regions._CACHE.clear()
        regions._CACHE.update(cache)


def measure(make: Callable[[], Any], reps: int = 5) -> dict[str, float]:
    """Calls per run (of the generated code and of leaf kernels), total ms (min over
    reps), µs per call outside the kernels (leaf kernels stubbed), and µs per call of the
    generated code and stores alone (its calls stubbed, regions included)."""
    exe = make()
    state = [0, 0]
    twin = leaf_twin(make, state)
    ns, keys = _kernel_names(exe)
    orig = {k: ns[k] for k in keys}
    rec: dict[str, Any] = {}
    count = [0]

    def recorder(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
        def call(*a: Any) -> Any:
            r = f(*a)
            count[0] += 1
            rec.setdefault(name, r)
            return r
        return call

    stub_cal = _stub_cost()
    for k in keys:
        ns[k] = recorder(k, orig[k])
    exe.reset()
    exe.execute()  # records each call's output (for the stubs) and counts the calls
    calls = count[0]
    twin.reset()
    twin.execute()  # the leaves keep their outputs
    state[:] = [1, 0]
    plain, leaf_stub, stub = [], [], []
    for _ in range(reps):
        for k in keys:
            ns[k] = orig[k]
        exe.reset()
        t = _clock()
        exe.execute()
        plain.append(_clock() - t)
        twin.reset()
        state[1] = 0
        t = _clock()
        twin.execute()
        leaf_stub.append(_clock() - t)
        for k in keys:
            ns[k] = (lambda v: lambda *a: v)(rec[k]) if k in rec else orig[k]
        exe.reset()
        t = _clock()
        exe.execute()
        stub.append(_clock() - t)
    for k in keys:
        ns[k] = orig[k]
    exe.reset()
    leaves = state[1]
    outside = min(leaf_stub) - leaves * stub_cal
    return {"calls": calls, "leaf_calls": leaves, "total_ms": min(plain) * 1e3,
            "outside_ms": outside * 1e3, "stub_us": (min(stub) / calls - stub_cal) * 1e6,
            "outside_us": outside / calls * 1e6, "outside_leaf_us": outside / leaves * 1e6}


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
                f"calls), total {m['total_ms']:.1f} ms CPU, outside kernels "
                f"{m['outside_ms']:.1f} ms = {m['outside_us']:.2f} us/call "
                f"({m['outside_leaf_us']:.2f} per leaf call); generated code + stores "
                f"alone {m['stub_us']:.2f} us/call")
        print(line, flush=True)
        lines.append(line)
    append_lines("results/call_overhead.txt", lines)


if __name__ == "__main__":
    main()
