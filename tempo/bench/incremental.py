"""Incrementalisation (ARCHITECTURE §5.5): device peak and time cost of computing a large
intermediate in blocks.

`python -m tempo.bench.incremental [--batch 16384] [--hid 1024] [--iters 3] [--reps 5]`
builds the E6 learner's shape — Linear -> tanh -> Linear regression over one large batch,
`loss.backward()` and SGD over iterations `i` — and compiles it twice, with
incrementalisation off and on (threshold: an eighth of the (batch, hid) activations).
It reports the device peak from the stores' own accountant (a tracked run), the compile
CPU time, and the run time of untracked runs, min and median over interleaved repeats
(one torch thread), with the machine's load; the losses of both must agree. Results are
appended to results/incremental.txt.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn import Linear
from tempo.api.nn.init import const_init
from tempo.api.optim.optim import SGD
from tempo.bench.clock import cpu_seconds
from tempo.bench.results import results_path
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

D_IN, D_OUT = 32, 4


def learner(cfg: ExecutionConfig, batch: int, hid: int, iters: int) -> tuple[Any, list[float]]:
    """The compiled learner and the list its loss sink fills (one loss per iteration)."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(batch, D_IN, generator=g), torch.randn(batch, D_OUT, generator=g)
    w1 = torch.randn(hid, D_IN, generator=g) / D_IN ** 0.5
    w2 = torch.randn(D_OUT, hid, generator=g) / hid ** 0.5
    losses: list[float] = []
    ctx = TempoContext(cfg, num_dims=1, dim_names=("i",))
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        l1 = Linear(D_IN, hid, domain=(i,), w_init_fun=const_init(w1))
        l2 = Linear(hid, D_OUT, domain=(i,), w_init_fun=const_init(w2))
        xs = RT.source_with_ts_udf(lambda ts: x, (batch, D_IN), dtypes.float32, domain=(i,))
        loss = ((l2(l1(xs).tanh()) - RT.const(y.numpy())) ** 2).mean()
        loss.backward()
        SGD(l1.parameters + l2.parameters, lr=0.05).step()
        loss.sink_udf(lambda v: losses.append(float(v)))
    return ctx.compile({I: iters}), losses


def _variant(on: bool, batch: int, hid: int, iters: int) -> dict[str, Any]:
    cfg = dataclasses.replace(ExecutionConfig.default(), dev="cpu",
                              enable_incrementalization=on,
                              incrementalize_mem_threshold=batch * hid * 4 // 8)
    t = cpu_seconds()
    exe, losses = learner(cfg, batch, hid, iters)
    compile_s = cpu_seconds() - t
    tracked, tracked_losses = learner(dataclasses.replace(cfg, device_memory_cap_bytes=1 << 50),
                                      batch, hid, iters)
    tracked.execute()
    blocks = {str(b): v for b, v in exe.sdg.bound_defs.items() if str(b).startswith("INC")}
    return {"exe": exe, "losses": losses, "tracked_losses": tracked_losses, "times": [],
            "compile_s": compile_s, "peak": tracked.memory_stats()["peak_bytes"],
            "blocks": blocks}


def compare(batch: int, hid: int, iters: int, reps: int) -> tuple[dict, dict, float]:
    """Both variants measured (interleaved repeats) and the largest relative difference
    between their losses."""
    torch.set_num_threads(1)
    learner(ExecutionConfig.default(), 8, 4, 1)  # warm-up: first-compile costs are no one's
    runs = {on: _variant(on, batch, hid, iters) for on in (False, True)}
    for _ in range(reps):  # interleaved: both see the same load
        for r in runs.values():
            r["losses"].clear()
            t = time.perf_counter()
            r["exe"].execute()
            r["times"].append((time.perf_counter() - t) / iters * 1e3)
    off, on = runs[False], runs[True]
    agree = max(abs(u - v) / max(abs(u), 1e-12) for u, v in zip(off["losses"], on["losses"]))
    return off, on, agree


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tempo.bench.incremental", description=__doc__)
    p.add_argument("--batch", type=int, default=16384)
    p.add_argument("--hid", type=int, default=1024)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", default=str(results_path("incremental.txt")))
    a = p.parse_args(argv)
    off, on, agree = compare(a.batch, a.hid, a.iters, a.reps)
    lines = [f"# {time.strftime('%Y-%m-%d %H:%M:%S')} learner batch={a.batch} hid={a.hid} "
             f"iters={a.iters} reps={a.reps}, 1 torch thread, load {os.getloadavg()[0]:.1f}"]
    for name, r in (("off", off), ("on", on)):
        lines.append(f"incrementalisation {name:3s}: peak {r['peak'] / 2**20:8.2f} MiB, "
                     f"iteration min {min(r['times']):8.2f} ms median "
                     f"{statistics.median(r['times']):8.2f} ms, compile "
                     f"{r['compile_s']:.2f} CPU-s, blocks {r['blocks'] or '-'}")
    lines.append(f"peak ratio off/on {off['peak'] / on['peak']:.2f}x; time ratio on/off "
                 f"(min) {min(on['times']) / min(off['times']):.2f}x; losses agree to "
                 f"{agree:.1e} (relative)")
    text = "\n".join(lines)
    print(text)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
