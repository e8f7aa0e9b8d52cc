"""Op counts and pass times of the compiler pipeline on the training programs of
tests/api/optim/test_training.py (MLP + Adam, tanh-RNN and GRU BPTT + Adam): the graph
the scheduler sees with no clean-up pass, with the passes that existed before issue 9
(DCE, CSE, single-branch merge folding) and with all of them. CPU milliseconds.

    .venv/bin/python scripts/measure_passes.py            # passes only (seconds)
    .venv/bin/python scripts/measure_passes.py --compile  # + full compile and run (minutes)
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api" / "optim"))

from test_training import CASES, mlp_program, rnn_program  # noqa: E402

from tempo.compiler.bounds import resolve_bounds  # noqa: E402
from tempo.compiler.passes.algebraic_rules import RULES  # noqa: E402
from tempo.compiler.pipeline import CLEANUP, run_pipeline  # noqa: E402
from tempo.core.configs import ExecutionConfig  # noqa: E402

OFF = {p.flag: False for p in CLEANUP if p.flag}
BEFORE = dict(OFF, enable_dead_code_elim=True, enable_duplicate_code_elim=True,
              enable_algebraic_optimizer=True,
              algebraic_optims_to_disable=tuple(r.name for r in RULES if r.name != "alias_merge"))
ALL = {p.flag: True for p in CLEANUP if p.flag}
CONFIGS = {"none": OFF, "before #9": BEFORE, "all": ALL}


def programs() -> dict[str, tuple[Any, dict, list]]:
    make = CASES["adam"][0]
    base = ExecutionConfig(dev="cpu", backend="torch")
    out = {}
    ctx, I, loss, params, *_ = mlp_program(make, base)
    out["mlp+adam"] = (ctx, {I: 50}, [loss] + params)
    for kind in ("tanh", "gru"):
        ctx, I, T, loss, params, _ = rnn_program(make, kind, base)
        out[f"{kind}-rnn bptt+adam"] = (ctx, {I: 50, T: 5}, [loss] + params)
    return out


def passes(ctx: Any, bounds: dict, outs: list, flags: dict) -> tuple[Any, dict[str, float]]:
    cfg = dataclasses.replace(ctx.execution_config, **flags, validate_pipeline_stages=False)
    sdg = ctx.sdg.copy()
    sdg.keep.update(rt.tensor_id for rt in outs)
    t = time.process_time()
    graph = run_pipeline(sdg, cfg, resolve_bounds(sdg, bounds, ""), {})
    cpu = {"passes": (time.process_time() - t) * 1e3}
    for p in CLEANUP:  # each pass alone, on the committed graph, for its own cost
        if flags.get(p.flag):
            one = dataclasses.replace(cfg, **{f: f == p.flag for f in OFF})
            t = time.process_time()
            run_pipeline(sdg, one, resolve_bounds(sdg, bounds, ""), {})
            cpu[p.name] = (time.process_time() - t) * 1e3
    return graph, cpu


def compile_and_run(ctx: Any, bounds: dict, outs: list, flags: dict) -> str:
    ctx.sdg.keep.update(rt.tensor_id for rt in outs)
    ctx.execution_config = dataclasses.replace(ctx.execution_config, **flags)
    t = time.process_time()
    exe = ctx.compile(bounds)
    compile_s = time.process_time() - t
    prof = exe.compile_profile()
    t = time.perf_counter()
    exe.execute()
    run_s = time.perf_counter() - t
    return (f"compile {compile_s:.1f} CPU s (isl_schedule {prof.get('isl_schedule', 0) / 1e3:.1f}"
            f" s wall), execute {run_s:.2f} s")


def main() -> None:
    full = "--compile" in sys.argv
    print(f"{'program':<20} {'passes':<10} {'ops':>5} {'edges':>6} {'over dims':>9}  CPU ms")
    for name, (ctx, bounds, outs) in programs().items():
        print(f"{name:<20} {'recorded':<10} {len(ctx.sdg.ops):>5}")
        for label, flags in CONFIGS.items():
            g, cpu = passes(ctx, bounds, outs, flags)
            edges = sum(len(es) for es in g.in_edges.values())
            over = sum(1 for op in g.ops.values() if len(op.domain))
            times = ", ".join(f"{k} {v:.0f}" for k, v in cpu.items())
            print(f"{'':<20} {label:<10} {len(g.ops):>5} {edges:>6} {over:>9}  {times}")
            if full and label != "none":
                fresh = programs()[name]
                print(f"{'':<31} {compile_and_run(*fresh, flags)}")


if __name__ == "__main__":
    main()
