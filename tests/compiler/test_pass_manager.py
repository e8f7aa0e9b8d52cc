"""The pass manager: flags switch passes, the clean-up group reaches a fixpoint, a pass
that breaks the graph is named, compile_profile() has a time per pass, and slow compiles
print their stages while fast ones stay silent."""

from __future__ import annotations

import dataclasses
import io
import time

import numpy as np
import pytest
from pass_harness import FLAGS, kinds, only, with_passes

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext, compile_driver
from tempo.api.compile_progress import CompileProgress
from tempo.compiler.pass_manager import Pass, PassManager, PassValidationError
from tempo.compiler.pipeline import CLEANUP
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import ConfigError
from tempo.core.sdg import SDG

A = np.arange(6, dtype=np.float32).reshape(2, 3)


def _ctx(cfg: ExecutionConfig) -> TempoContext:
    ctx = TempoContext(cfg, num_dims=1)
    ((t, _),) = ctx.variables_and_bounds
    with ctx:
        x = RT.const(A).permute((1, 0)).permute((1, 0)) * RT.from_symbol(t).cast(dtypes.float32)
        x.sink_udf(lambda v: None)
    return ctx


def test_every_cleanup_pass_has_a_flag_of_the_api() -> None:
    fields = {f.name for f in dataclasses.fields(ExecutionConfig)}
    assert set(FLAGS) <= fields and len(FLAGS) == len(CLEANUP)


def test_compile_profile_times_each_enabled_pass(cfg) -> None:
    on = only(cfg, ["enable_dead_code_elim", "enable_algebraic_optimizer"])
    ctx = _ctx(on)
    exe = ctx.compile({ctx.variables_and_bounds[0][1]: 3})
    prof = exe.compile_profile()
    assert prof == exe.get_compilation_time_breakdown()
    for key in ("pass:commit_recurrences", "pass:dead_code", "pass:algebraic", "pass:storage",
                "validate", "total"):
        assert prof[key] >= 0.0, key
    assert "pass:constant_folding" not in prof and "pass:domain_reduction" not in prof
    assert kinds(exe.sdg)["permute"] == 0


def test_disabled_rules_do_not_fire_and_unknown_ones_are_an_error(cfg) -> None:
    base = only(cfg, ["enable_dead_code_elim", "enable_algebraic_optimizer"])
    ctx = _ctx(dataclasses.replace(base, algebraic_optims_to_disable=("permute_chain",)))
    exe = ctx.compile({ctx.variables_and_bounds[0][1]: 3})
    assert kinds(exe.sdg)["permute"] == 2
    ctx = _ctx(dataclasses.replace(base, algebraic_optims_to_disable=("no_such_rule",)))
    with pytest.raises(ConfigError, match="no_such_rule"):
        ctx.compile({ctx.variables_and_bounds[0][1]: 3})


def _breaker(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    """A buggy pass: edits the graph's dicts behind the helpers' back."""
    for es in sdg.out_edges.values():
        if es:
            es.pop()
            break
    return sdg


def test_a_pass_that_breaks_the_graph_is_named(cfg) -> None:
    sdg = _ctx(cfg).sdg.copy()
    pm = PassManager(cfg)
    with pytest.raises(PassValidationError, match="after pass 'breaker'"):
        pm.run(Pass("breaker", _breaker), sdg)
    quiet = PassManager(dataclasses.replace(cfg, validate_pipeline_stages=False))
    quiet.run(Pass("breaker", _breaker), _ctx(cfg).sdg.copy())  # not checked: no error


def test_the_cleanup_group_runs_to_a_fixpoint(cfg) -> None:
    rounds: list[str] = []
    pm = PassManager(only(cfg, FLAGS), report=lambda stage, ms, note: rounds.append(note))
    sdg = _ctx(cfg).sdg.copy()
    sdg = pm.fixpoint("clean-up", CLEANUP, sdg)
    version = sdg.version
    pm.fixpoint("clean-up", CLEANUP, sdg)
    assert sdg.version == version  # nothing left to do
    assert rounds[-1].startswith("1 rounds")


def test_flags_off_means_passes_off(cfg) -> None:
    def build():  # noqa: ANN202
        return {"y": RT.const(A) * 2.0 + 0.0}

    _, g = with_passes(cfg, build, 0, {}, [])
    assert kinds(g)["mul"] == 1 and kinds(g)["add"] == 1 and kinds(g)["const"] == 3


def test_slow_compiles_print_their_stages(cfg, monkeypatch, capsys) -> None:
    out = io.StringIO()
    with CompileProgress(after_s=0.0, stream=out) as progress:
        progress.done("dead_code", 1.5, "10 -> 8 ops")
        progress.start("scheduling")
    text = out.getvalue()
    assert "dead_code" in text and "10 -> 8 ops" in text and "scheduling" in text
    assert "compiled after" in text

    ctx = _ctx(cfg)
    ctx.compile({ctx.variables_and_bounds[0][1]: 3})
    assert capsys.readouterr().err == ""  # a fast compile is silent
    monkeypatch.setattr(compile_driver, "PROGRESS_AFTER_S", 0.0)
    ctx.compile({ctx.variables_and_bounds[0][1]: 3})
    err = capsys.readouterr().err
    for stage in ("commit_recurrences", "schedule", "codegen", "compiled after"):
        assert stage in err, stage


def test_a_failed_compile_stops_its_progress_timer(cfg, capsys) -> None:
    out = io.StringIO()
    with pytest.raises(RuntimeError), CompileProgress(after_s=0.05, stream=out):
        raise RuntimeError("boom")
    time.sleep(0.1)
    assert out.getvalue() == ""
