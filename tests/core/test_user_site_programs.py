"""Programs written with the API inside the package (the benchmarks' systems, the demo) are
user code for error sites: an op they record names their line, not the line that called
them (E6's memory error named `ctx, bounds = _program(...)` in the caller, not the op's
line in the PPO program), while Tempo's library frames are still skipped."""

from __future__ import annotations

from tempo.bench.compile_programs import mlp_adam


def test_ops_recorded_by_a_bench_program_name_its_lines() -> None:
    prog = mlp_adam(2)
    sites = [str(op.site) for op in prog.ctx.sdg.ops.values()]
    assert sites and all("tempo/bench/compile_programs.py:" in s for s in sites), sites[:3]
    # Linear's own ops (recorded in tempo/api/nn) name the program's line that built it
    assert not any("/tempo/api/" in s for s in sites)
