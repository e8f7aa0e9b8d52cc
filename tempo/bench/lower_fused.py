"""Hand-written composites with and without their lowering to the fused primitives
(`compiler/passes/lower_fused*.py`), against torch's fused functions.

`python -m tempo.bench.lower_fused [--b 4 --h 4 --l 1024 --e 64 --reps 7]` builds, as a
user writes them by hand, softmax and log-softmax over scores (B, H, L, L), layer and
RMS norm over (B, H, L, L) rows, and attention over q, k, v (B, H, L, E), each a Tempo
program (one step, input from a source, output to a sink) compiled with the lowering on
(the default) and off (`algebraic_optims_to_disable`). It reports kernel calls per run
(and the backend kernels they run: a fused region calls its members' kernels) and,
interleaved in one process on one torch thread, min and median ms of both and of
torch's fused call (`torch.softmax`, `F.layer_norm`, `F.scaled_dot_product_attention`),
with `uptime`. Results are appended to results/lower_fused.txt.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.bench.clock import cpu_seconds
from tempo.bench.results import append_lines
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.ops_region import RegionOp

RULES = ("lower_softmax", "lower_log_softmax", "lower_norm", "lower_attention")


def _softmax(x: RT) -> RT:
    e = (x - x.max(-1, keepdim=True)[0]).exp()
    return e / e.sum(-1, keepdim=True)


def _log_softmax(x: RT) -> RT:
    z = x - x.max(-1, keepdim=True)[0]
    return z - z.exp().sum(-1, keepdim=True).ln()


def _layer_norm(x: RT) -> RT:
    xc = x - x.mean(-1, keepdim=True)
    return xc / ((xc * xc).mean(-1, keepdim=True) + 1e-5).sqrt()


def _rms_norm(x: RT) -> RT:
    return x * ((x * x).mean(-1, keepdim=True) + 1e-6) ** -0.5


def _attention(q: RT, k: RT, v: RT) -> RT:
    return _softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))) @ v


def cases(b: int, h: int, seq: int, e: int) -> dict[str, tuple[Callable[..., RT], Callable[
        ..., torch.Tensor], list[tuple[int, ...]]]]:
    """name -> (the hand-written Tempo composite, torch's fused call, input shapes)."""
    scores: list[tuple[int, ...]] = [(b, h, seq, seq)]
    return {
        "softmax": (_softmax, lambda x: torch.softmax(x, -1), scores),
        "log_softmax": (_log_softmax, lambda x: torch.log_softmax(x, -1), scores),
        "layer_norm": (_layer_norm, lambda x: F.layer_norm(x, x.shape[-1:], eps=1e-5),
                       scores),
        "rms_norm": (_rms_norm, lambda x: F.rms_norm(x, x.shape[-1:], eps=1e-6), scores),
        "attention": (_attention, F.scaled_dot_product_attention, [(b, h, seq, e)] * 3),
    }


def compile_case(build: Callable[..., RT], inputs: list[torch.Tensor], lower: bool,
                 regions: str = "compile") -> Any:
    """One step: the inputs from sources, the composite, its value to a sink; fused
    regions run by `regions` (`torch_compilation_backend`)."""
    cfg = dataclasses.replace(ExecutionConfig(), dev="cpu", backend="torch",
                              algebraic_optims_to_disable=() if lower else RULES,
                              torch_compilation_backend=regions)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        xs = [RT.source_with_ts_udf(lambda ts, a=a: a, tuple(a.shape), dtypes.float32,
                                    domain=(t,)) for a in inputs]
        build(*xs).sink_udf(lambda v: None)
    return ctx.compile({T: 1})


def kernel_calls(exe: Any) -> tuple[int, int]:
    """(calls of the generated code's kernels, backend kernels they run: a fused region
    runs its members') in one run, each kernel wrapped by a counter."""
    ns = exe.generated.namespace
    keys = [k for k in ns if k.startswith("k") and k[1:].isdigit()]
    orig, n = {k: ns[k] for k in keys}, [0, 0]

    def counted(f: Callable[..., Any], inner: int) -> Callable[..., Any]:
        def call(*a: Any) -> Any:
            n[0] += 1
            n[1] += inner
            return f(*a)
        return call

    for k in keys:
        op = exe.sdg.ops.get(int(k[1:]))
        ns[k] = counted(orig[k], len(op.body) if isinstance(op, RegionOp) else 1)
    exe.reset()
    exe.execute()
    for k in keys:
        ns[k] = orig[k]
    return n[0], n[1]


def _call(fn: Callable[..., Any], inputs: list[torch.Tensor]) -> Callable[[], Any]:
    return lambda: fn(*inputs)


def _run(exe: Any) -> Callable[[], Any]:
    def run() -> None:
        exe.reset()
        exe.execute()
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--b", type=int, default=4)
    ap.add_argument("--h", type=int, default=4)
    ap.add_argument("--l", type=int, default=1024)
    ap.add_argument("--e", type=int, default=64)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--only", nargs="*", default=None, help="case names")
    ap.add_argument("--regions", default="compile", choices=["compile", "eager"],
                    help="torch_compilation_backend of fused regions")
    args = ap.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    head = (f"# {time.strftime('%Y-%m-%d %H:%M:%S')}  B{args.b} H{args.h} L{args.l} "
            f"E{args.e}, regions {args.regions}, 1 thread, {args.reps} interleaved reps; "
            f"{os.popen('uptime').read().strip()}")
    lines = [head]
    print(head, flush=True)
    calls: dict[str, tuple[int, int]] = {}
    kernel_calls(compile_case(_softmax, [torch.ones(2, 2)], True))  # one-time warm-up
    for name, (build, fused, shapes) in cases(args.b, args.h, args.l, args.e).items():
        if args.only and name not in args.only:
            continue
        inputs = [torch.randn(s, generator=g) for s in shapes]
        exes, cpu = {}, {}
        for k, lower in (("lowered", True), ("composite", False)):
            t0 = cpu_seconds()
            exes[k] = compile_case(build, inputs, lower, args.regions)
            calls[k] = kernel_calls(exes[k])  # the first run (torch.compile's work)
            cpu[k] = cpu_seconds() - t0
        runs: dict[str, Callable[[], Any]] = {"torch": _call(fused, inputs)}
        runs.update({k: _run(e) for k, e in exes.items()})
        ms: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(args.reps):
            for k, run in runs.items():
                t0 = time.perf_counter()
                run()
                ms[k].append((time.perf_counter() - t0) * 1e3)
        base = statistics.median(ms["torch"])
        parts = [f"{k} {min(v):.1f}/{statistics.median(v):.1f} ms "
                 f"({statistics.median(v) / base:.2f}x)" for k, v in ms.items()]
        line = (f"{name}: calls (backend kernels) lowered {calls['lowered'][0]} "
                f"({calls['lowered'][1]}), composite {calls['composite'][0]} "
                f"({calls['composite'][1]}); compile + first run CPU s lowered "
                f"{cpu['lowered']:.1f}, composite {cpu['composite']:.1f}; min/median "
                + ", ".join(parts))
        print(line, flush=True)
        lines.append(line)
    append_lines("lower_fused.txt", lines)


if __name__ == "__main__":
    main()
