"""Measures the core issue's figures: compile and execute time of a 3-d program with about
50 ops at bounds (4, 10, 100), and the per-op Python overhead of the generated code.

    .venv/bin/python scripts/measure_core.py
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

import tempo.runtime.backends  # noqa: F401 - import backends before timing compiles
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes


def three_dim_program(bounds: tuple[int, int, int]) -> dict:
    cfg = ExecutionConfig(dev="cpu", backend="torch", path="results/core/run/")
    ctx = TempoContext(cfg, num_dims=3)
    (b, B), (i, I), (t, T) = ctx.variables_and_bounds
    rng = np.random.default_rng(0)
    w1 = RT.const(rng.standard_normal((8, 8)).astype(np.float32) * 0.3)
    w2 = RT.const(rng.standard_normal((8, 8)).astype(np.float32) * 0.3)
    out: list = []
    with ctx:
        s = RT.placeholder((8,), dtypes.float32, domain=(b, i, t))
        s[b, i, 0] = RT.ones((8,)) * 0.1
        h = (w1 @ s).tanh()
        h = (w2 @ h + s).sigmoid()
        a = h.softmax(0)
        s[b, i, t + 1] = (s * 0.9 + a * 0.1 - h.mean() * 0.01).tanh()
        r = (s * s).sum() - a.max()
        g = RT.placeholder((), dtypes.float32, domain=(b, i, t))
        g[b, i, T - 1] = r
        g[True] = r + 0.99 * g[b, i, t + 1]
        adv = (g - r.exp() / (1.0 + r.abs())) * 0.5
        loss = adv[b, i, 0:T].mean(0) + g[b, i, 0:T].max(0)[0]
        loss[0:B, i].mean(0).sink_udf(lambda v: out.append(float(v)))
    n_ops = len(ctx.sdg.ops)
    t0 = time.perf_counter()
    exe = ctx.compile({B: bounds[0], I: bounds[1], T: bounds[2]})
    compile_s = time.perf_counter() - t0
    exe.execute()  # warm-up
    exe.reset()
    t0 = time.perf_counter()
    exe.execute()
    run_s = time.perf_counter() - t0
    return {"ops": n_ops, "bounds": bounds, "compile_s": compile_s, "execute_s": run_s,
            "breakdown_ms": exe.get_compilation_time_breakdown(), "outputs": len(out)}


def per_op_overhead(n_ops: int = 20, steps: int = 20000) -> dict:
    """A chain of identity ops per step: time per executed op (kernel cost ~ 0)."""
    cfg = ExecutionConfig(dev="cpu", backend="torch", path="results/core/run/",
                          enable_gc=False)
    ctx = TempoContext(cfg, num_dims=1)
    (t, T), = ctx.variables_and_bounds
    with ctx:
        x = RT.from_symbol(t)
        y = x
        for _ in range(n_ops):
            y = y.ident()
        y.sink_udf(lambda v: None)
    exe = ctx.compile({T: steps})
    exe.execute()
    exe.reset()
    t0 = time.perf_counter()
    exe.execute()
    el = time.perf_counter() - t0
    executed = steps * (n_ops + 2)
    return {"executed_ops": executed, "seconds": el, "us_per_op": el / executed * 1e6}


def main() -> None:
    res = {"three_dim": three_dim_program((4, 10, 100)), "overhead": per_op_overhead()}
    os.makedirs("results/core", exist_ok=True)
    with open("results/core/measure_core.json", "w") as f:
        json.dump(res, f, indent=1, default=str)
    print(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
