"""Op counts and pass times of the compiler pipeline on the training programs of
tests/api/optim/test_training.py (MLP + Adam, tanh-RNN and GRU BPTT + Adam): the graph
the scheduler sees with every clean-up pass off, with the pre-issue-9 passes (DCE, CSE,
merge folding) and with all of them on. Prints one table; nothing is executed.

    .venv/bin/python scripts/measure_passes.py
"""

from __future__ import annotations

import collections
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api" / "optim"))

from test_training import CASES, mlp_program, rnn_program  # noqa: E402

from tempo.compiler.bounds import resolve_bounds  # noqa: E402
from tempo.compiler.pipeline import CLEANUP, run_pipeline  # noqa: E402
from tempo.core.configs import ExecutionConfig  # noqa: E402

OFF = {p.flag: False for p in CLEANUP if p.flag}
OLD = dict(OFF, enable_dead_code_elim=True, enable_duplicate_code_elim=True)
# (before issue 9, merge folding ran under enable_algebraic_optimizer; it is one rule now)
ALL = {p.flag: True for p in CLEANUP if p.flag}


def programs() -> dict[str, tuple]:
    make = CASES["adam"][0]
    base = ExecutionConfig(dev="cpu", backend="torch")
    out = {}
    ctx, I, loss, params, *_ = mlp_program(make, base)
    out["mlp+adam"] = (ctx, {I: 50}, [loss] + params)
    for kind in ("tanh", "gru"):
        ctx, I, T, loss, params, _ = rnn_program(make, kind, base)
        out[f"{kind}-rnn bptt+adam"] = (ctx, {I: 50, T: 5}, [loss] + params)
    return out


def measure(ctx, bounds, outs, flags: dict) -> tuple[int, int, int, dict]:  # noqa: ANN001
    cfg = dataclasses.replace(ctx.execution_config, **flags, validate_pipeline_stages=False)
    sdg = ctx.sdg.copy()
    sdg.keep.update(rt.tensor_id for rt in outs)
    profile: dict[str, float] = {}
    t = time.perf_counter()
    out = run_pipeline(sdg, cfg, resolve_bounds(sdg, bounds, ""), profile)
    profile["total"] = (time.perf_counter() - t) * 1e3
    edges = sum(len(es) for es in out.in_edges.values())
    temporal = sum(1 for op in out.ops.values() if len(op.domain))
    return len(out.ops), edges, temporal, profile


def main() -> None:
    print(f"{'program':<22} {'config':<8} {'ops':>5} {'edges':>6} {'ops over dims':>13}  ms per pass")
    for name, (ctx, bounds, outs) in programs().items():
        print(f"{name:<22} {'recorded':<8} {len(ctx.sdg.ops):>5}")
        for label, flags in (("none", OFF), ("pre-#9", OLD), ("all", ALL)):
            n, e, tmp, prof = measure(ctx, bounds, outs, flags)
            times = ", ".join(f"{k.removeprefix('pass:')} {v:.1f}" for k, v in prof.items())
            print(f"{'':<22} {label:<8} {n:>5} {e:>6} {tmp:>13}  {times}")
        kinds = collections.Counter(type(op).__name__ for op in ctx.sdg.ops.values())
        print(f"{'':<22} recorded kinds: {dict(kinds.most_common(6))}")


if __name__ == "__main__":
    main()
