"""Per-kernel-call overhead outside the kernels (ARCHITECTURE §7 asks for a few hundred ns).

`python -m tempo.bench.call_overhead [ppo] [gpt2] [--t 256]` compiles the PPO-shaped
program (64 envs x 64 steps, 2x64 MLP, 3 iterations) and the E1 GPT-2-core decoder and
reports, in thread CPU time (robust to other processes on a shared machine; one torch
thread):

- outside: the run with every backend kernel stubbed, per LEAF kernel call (the primary
  number). A leaf kernel is one op's kernel (`tempo.prims`), so a fused region is
  several (its members; a maximum-minimum pair folded into one torch.clamp is one), and
  the region's body function and everything the generated code does between calls
  (stores, frees, charges, guards) count as outside. A twin executor's leaf kernels first
  run and keep their first output, then return it at once; the stubs' own cost is
  subtracted, calibrated on the very closure the twin uses. Tensor allocation and freeing
  happen inside the kernels, so they count there (the baselines pay them too);
- store copies: the stores' data movement (a block buffer's allocation, a point's write
  into its block, `front[j] = value`, or into a window store's slot, `copy_`, and that
  store's compaction `copy_`, a deferred block store's `stack` + `copy_` at its first
  read, `cat` of ranges spanning blocks, `stack` of point ranges) is backend work too,
  which the baselines
  pay in their own way: it is counted and stubbed separately, and "outside" is
  reported with those copies and without them (never hidden in either);
- stub: the run with the generated code's calls stubbed (regions whole): only the
  generated code, stores and frees, per call the generated code makes.

Both subtract nothing measured under load from something else measured under load (a
timer around each kernel, tried first, was off by its calibration error times thousands
of calls at load 20). As a scale for a loaded machine it also prints the CPU time of one
dict write and one Python call (~80 and ~150 ns here).
Results are appended to results/call_overhead.txt.

Changed 2026-11-23 (ovhloop): the folded clamps (384 per PPO run) were called outside
the twin's stubs and so counted outside and not as calls; the stub calibration timed a
bare lambda, not the twin's closure; the store copies were inside "outside" without a
word; the "dict write" scale timed a dict growing to 200k keys (~1 µs of page faults).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from tempo.bench.results import append_lines

_clock = time.thread_time


def _kernel_names(exe: Any) -> tuple[dict[str, Any], list[str]]:
    ns = exe.generated.namespace
    return ns, [k for k in ns if k.startswith("k") and k[1:].isdigit()]


def scale_ns(n: int = 100_000) -> tuple[float, float]:
    """CPU ns of one dict write `d[k] = i` (a 64-key dict, keys made before) and of one
    Python call of a 3-argument function, each less the bare loop: the machine's speed
    now. (A write into a dict growing to 200k tuple keys, measured here before, timed
    the allocation and page faults too: ~1 µs against ~80 ns for the write.)"""
    keys = [(i % 64,) for i in range(n)]
    d: dict[tuple[int], int] = {k: 0 for k in keys[:64]}

    def f(a: Any, b: Any, c: Any) -> None:
        return None

    t = _clock()
    for _k in keys:
        pass
    bare = _clock() - t
    t = _clock()
    for k in keys:
        d[k] = 1
    write = _clock() - t - bare
    t = _clock()
    for k in keys:
        f(k, k, k)
    call = _clock() - t - bare
    return write / n * 1e9, call / n * 1e9


def _leaf(f: Callable[..., Any], state: list[int],
          armed: list[Callable[[], None]]) -> Callable[..., Any]:
    """`f` counted in state[1], running and keeping its first output until armed (each
    function in `armed` arms one leaf; the twin arms them after its first run); armed,
    it is a stub that returns that output at once and counts nothing (its code is
    swapped for `stub`'s: as cheap as a bare `lambda *a: v`, so that the stubs' cost,
    subtracted, is small next to what is measured; the counts come from the run
    before, the program being deterministic)."""
    first: list[Any] = []

    def call(*a: Any) -> Any:
        state[1] += 1
        r = f(*a)
        if not first:
            first.append(r)
        return r

    def stub(*a: Any) -> Any:
        if a is None:  # never: names call's free variables, so the code can be swapped
            return f, state
        return first[0]

    def arm() -> None:
        call.__code__ = stub.__code__

    armed.append(arm)
    return call


def _moved(f: Callable[..., Any], state: list[int]) -> Callable[..., Any]:
    """A store's data movement `f`, counted in state[2]: run, or (with state[3] == 1 once
    it has run) a stub returning its first output."""
    kept: list[Any] = []

    def call(*a: Any) -> Any:
        state[2] += 1
        if state[3] and kept:
            return kept[0]
        r = f(*a)
        if not kept:
            kept.append(r)
        return r
    return call


def _stub_cost(n: int, bare: bool = False) -> float:
    """Seconds one call of a stubbed leaf costs: the same closure the twin uses, armed,
    `n` calls. The machine's speed moves
    by 2x within seconds here, so each twin run is paired with a calibration run just
    before it. (A stubbed store copy costs one more list read: not told apart.) `bare`:
    the bare `lambda *a: v` the "stub" run uses instead."""
    state: list[int] = [0, 0, 0, 1]
    armed: list[Callable[[], None]] = []
    stub = (lambda v: lambda *a: v)(None) if bare else _leaf(lambda *a: None, state, armed)
    stub(0)
    for arm in armed:
        arm()
    t = _clock()
    for _ in range(n):
        stub(n, n, n)
    return (_clock() - t) / n


def leaf_twin(make: Callable[[], Any], state: list[int],
              armed: list[Callable[[], None]]) -> Any:
    """`make()` with every leaf kernel wrapped by `_leaf` (armed by `armed`; an op's kernel; a fused
    region's members, a folded pair (clamp, linear) included, are leaves, the region is not),
    and the
    stores' data movement too (block buffers' allocation, point writes into blocks, the
    deferred stores' `stack`, range `cat`, point-range `stack`: backend kernels the
    baselines pay as well, counted in state[2]; a stubbed allocation returns the first
    buffer of its shape). state = [unused, leaf calls, movement calls, stub movement]. Fused regions
    are rebuilt for the twin (their body cache is set aside)."""
    from tempo.core.ops_region import RegionOp
    from tempo.runtime import regions
    from tempo.runtime.backends.torch import TorchBackend
    from tempo.runtime.executor import executor

    orig = (TorchBackend.kernel, TorchBackend.stack, regions.fold_kernel,
            executor.array_ops, executor.stack_along, TorchBackend.alloc_block,
            executor.slot_put)
    cache = dict(regions._CACHE)

    def kernel(self: Any, op: Any) -> Any:
        k = orig[0](self, op)
        return k if isinstance(op, RegionOp) else _leaf(k, state, armed)

    def moved(f: Callable[..., Any]) -> Callable[..., Any]:
        return _moved(f, state)

    stack_leaf = moved(lambda be, xs: orig[1](be, xs))

    def stack(self: Any, xs: Any) -> Any:
        return stack_leaf(self, xs)

    blocks: dict[tuple, Callable[..., Any]] = {}  # a stub per buffer shape

    def alloc_block(self: Any, n: int, shape: tuple[int, ...], dt: Any,
                    at_front: bool = True) -> Any:
        key = (n, shape, dt, at_front)
        if key not in blocks:
            blocks[key] = moved(lambda: orig[5](self, n, shape, dt, at_front))
        return blocks[key]()

    def array_ops(name: str) -> tuple[Callable, Callable, Callable]:
        select, put, cat = orig[3](name)
        return select, moved(put), moved(cat)

    regions._CACHE.clear()
    executor.slot_put = lambda name: moved(orig[6](name))  # type: ignore[assignment]  # bench-only patch
    TorchBackend.kernel = kernel  # type: ignore[method-assign]  # bench-only patch
    TorchBackend.stack = stack  # type: ignore[method-assign]  # bench-only patch
    regions.fold_kernel = lambda *kind: _leaf(orig[2](*kind), state, armed)
    executor.array_ops = array_ops  # type: ignore[assignment]  # bench-only patch
    executor.stack_along = lambda name: moved(orig[4](name))  # type: ignore[assignment]  # bench-only patch
    try:
        exe = make()
        # (the stores allocate through the backend at run time: the twin's own backend)
        exe.backend.alloc_block = functools.partial(alloc_block, exe.backend)
        return exe
    finally:
        TorchBackend.kernel, TorchBackend.stack = orig[0], orig[1]  # type: ignore[method-assign]  # restored
        regions.fold_kernel, executor.array_ops, executor.stack_along = orig[2:5]
        executor.slot_put = orig[6]
        regions._CACHE.clear()
        regions._CACHE.update(cache)


def measure(make: Callable[[], Any], reps: int = 7) -> dict[str, float]:
    """Calls per run (of the generated code, of leaf kernels, of data movement), total ms
    (min over reps), the time outside the kernels (leaf kernels stubbed) with and without
    the stores' data movement (stubbed too): min and median over `reps` runs, each less
    its stubs' cost calibrated just before and just after it (their mean; the spread of
    all calibrations is reported, as the machine's speed moves within seconds here), and
    µs per call of the generated code and stores alone (its calls stubbed, regions
    included; median over reps, each less its paired stub cost)."""
    exe = make()
    state: list[int] = [0, 0, 0, 0]
    armed: list[Callable[[], None]] = []
    twin = leaf_twin(make, state, armed)
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

    for k in keys:
        ns[k] = recorder(k, orig[k])
    exe.reset()
    exe.execute()  # records each call's output (for the stubs) and counts the calls
    calls = count[0]
    twin.reset()
    twin.execute()  # the leaves keep their first outputs
    for arm in armed:
        arm()
    plain: list[float] = []
    twins: dict[int, list[float]] = {0: [], 1: []}  # outside, less the paired stub cost
    stub: list[float] = []
    cals: list[float] = []
    counts = {1: (state[1], state[2])}
    for _ in range(reps):
        for k in keys:
            ns[k] = orig[k]
        exe.reset()
        t = _clock()
        exe.execute()
        plain.append(_clock() - t)
        for moves in (0, 1):
            leaves, moved = counts[1]
            before = _stub_cost(leaves + moved)
            state[:] = [1, 0, 0, moves]
            twin.reset()
            t = _clock()
            twin.execute()
            t = _clock() - t
            after = _stub_cost(leaves + moved)
            cals += [before, after]
            assert state[1] == 0 and state[2] == moved, "a leaf ran unarmed"
            # (the wrappers are ours)
            twins[moves].append(t - (leaves + moved) * (before + after) / 2)
        for k in keys:
            ns[k] = (lambda v: lambda *a: v)(rec[k]) if k in rec else orig[k]
        exe.reset()
        cal = _stub_cost(calls, bare=True)
        t = _clock()
        exe.execute()
        stub.append((_clock() - t) / calls - cal)
    for k in keys:
        ns[k] = orig[k]
    exe.reset()
    leaves, moves = counts[1]
    med = {k: statistics.median(twins[k]) for k in (0, 1)}
    low = {k: min(twins[k]) for k in (0, 1)}
    return {"calls": calls, "leaf_calls": leaves, "moves": moves, "reps": reps,
            "total_ms": min(plain) * 1e3, "outside_ms": med[0] * 1e3,
            "bare_ms": med[1] * 1e3, "stub_us": statistics.median(stub) * 1e6,
            "outside_leaf_us": med[0] / leaves * 1e6, "bare_leaf_us": med[1] / leaves * 1e6,
            "outside_leaf_min_us": low[0] / leaves * 1e6,
            "bare_leaf_min_us": low[1] / leaves * 1e6,
            "stub_cal_ns": statistics.median(cals) * 1e9, "stub_cal_min_ns": min(cals) * 1e9,
            "stub_cal_max_ns": max(cals) * 1e9}


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
    ap.add_argument("--reps", type=int, default=7, help="runs of each kind (min, median)")
    args = ap.parse_args()
    bad = [p for p in args.programs if p not in ("ppo", "gpt2")]
    if bad:
        ap.error(f"unknown program {bad[0]!r}: choose ppo or gpt2")
    torch.set_num_threads(1)
    write, call = scale_ns()
    lines = [f"# {time.strftime('%Y-%m-%d %H:%M:%S')}  {os.popen('uptime').read().strip()}",
             f"dict write {write:.0f} ns, Python call {call:.0f} ns CPU (the machine now)"]
    print(lines[0], "\n" + lines[1], flush=True)
    for which in args.programs:
        print(f"{which}: compiling ...", flush=True)
        m = measure(functools.partial(build, which, args.t), args.reps)
        line = (f"{which}: {m['calls']:.0f} calls/run, {m['leaf_calls']:.0f} leaf kernel "
                f"calls, {m['moves']:.0f} store copies/allocations; total "
                f"{m['total_ms']:.1f} ms CPU; outside kernels per leaf call over "
                f"{m['reps']} runs (min / median): {m['outside_leaf_min_us']:.2f} / "
                f"{m['outside_leaf_us']:.2f} us with store copies ({m['outside_ms']:.1f} ms), "
                f"{m['bare_leaf_min_us']:.2f} / {m['bare_leaf_us']:.2f} us without "
                f"({m['bare_ms']:.1f} ms); stub cost {m['stub_cal_min_ns']:.0f}-"
                f"{m['stub_cal_max_ns']:.0f} ns (median {m['stub_cal_ns']:.0f}); generated "
                f"code + stores alone {m['stub_us']:.2f} us/call")
        print(line, flush=True)
        lines.append(line)
    append_lines("call_overhead.txt", lines)


if __name__ == "__main__":
    main()
