"""The schedule order check (`tempo/schedule/verify.py`, on with `validate_pipeline_stages`,
as in test_cfg): a generated order that runs a read before the point it reads, or after that
point was freed, is a ScheduleError naming the user's lines at compile time, not a KeyError
or a stale value at run time. Wrong orders are made here deliberately (isl's AST reversed,
a free moved first); right ones pass, and the default config does not run the check."""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Any

import numpy as np
import pytest
import torch

import tempo.schedule.scheduler as scheduler
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import ScheduleError
from tempo.core.sdg import TensorId
from tempo.schedule.tree import Free, If, Loop, Node, Seq
from tempo.schedule.verify import verify_order

B_, T_ = 3, 6
X = np.random.default_rng(0).standard_normal((B_, T_)).astype(np.float32)


def _isl_program(cfg: ExecutionConfig) -> tuple[Any, Any]:
    """y[b] needs x[b, 0] and s[b, t>=1] needs y[b]: only isl's scheduler orders it."""
    ctx = TempoContext(cfg, num_dims=2)
    (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: torch.tensor(X[ts[b], ts[t]]), (), dtypes.float32,
                                  domain=(b, t))
        s = RT.placeholder((), dtypes.float32, domain=(b, t))
        y = s[b, 0] * 2.0
        s[b, 0] = x
        s[True] = x + y
    ctx.sdg.keep.add(s.tensor_id)
    return ctx.compile({B: B_, T: T_}), s


def _cfg(**kw: Any) -> ExecutionConfig:
    return dataclasses.replace(ExecutionConfig.test_cfg(), path="", **kw)


def _reversed(node: Node) -> Node:
    """Every sequence run backwards (a loop body's statements last to first): the ops at
    one point run before the ops whose values they read."""
    if isinstance(node, Seq):
        return Seq([_reversed(c) for c in reversed(node.children)])
    if isinstance(node, Loop):
        return Loop(node.counter, node.lo, node.hi, node.step, _reversed(node.body))
    if isinstance(node, If):
        return If(node.cond, _reversed(node.then),
                  None if node.else_ is None else _reversed(node.else_))
    return node


def test_a_right_isl_order_passes_and_computes() -> None:
    exe, s = _isl_program(_cfg())
    assert "isl_ast" in exe.compile_profile() and "verify_schedule" in exe.compile_profile()
    exe.execute()
    got = np.array([[float(exe.get_spatial_tensor_torch(s.tensor_id, (i, j)))
                     for j in range(T_)] for i in range(B_)])
    want = X.copy()
    want[:, 1:] += 2.0 * X[:, :1]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_an_isl_ast_in_reverse_order_is_a_compiler_bug_at_compile_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    orig = scheduler.ast_to_tree
    monkeypatch.setattr(scheduler, "ast_to_tree", lambda ast, prog: _reversed(
        orig(ast, prog)))
    with pytest.raises(ScheduleError) as err:
        _isl_program(_cfg())
    msg = str(err.value)
    assert "bug in Tempo's compiler" in msg and "reads a point not yet made" in msg
    assert "test_verify_order.py" in msg  # the user's lines, not internal ids
    assert "s[True] = x + y" in msg or "y = s[b, 0] * 2.0" in msg or "s[b, 0] = x" in msg


def test_the_default_config_does_not_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compile time in the default config is untouched: the check does not run there."""
    import tempo.api.compile_driver as driver

    calls: list[int] = []
    monkeypatch.setattr(driver, "verify_order", lambda *a, **k: calls.append(1))
    exe, _ = _isl_program(dataclasses.replace(ExecutionConfig.default(), path="", dev="cpu"))
    assert calls == [] and "verify_schedule" not in exe.compile_profile()


def _tree_of(cfg: ExecutionConfig) -> tuple[Any, Node, dict[str, int]]:
    """The optimised graph, its schedule tree and bounds, as the compile made them."""
    captured: dict[str, Any] = {}
    orig = scheduler.compute_schedule

    def grab(sdg: Any, bounds: Any, stored: Any) -> Any:
        out = orig(sdg, bounds, stored)
        captured.update(sdg=sdg, tree=out.tree, bounds={b.name: int(v) for b, v in
                                                          bounds.items()})
        return out

    import tempo.api.compile_driver as driver

    mp = pytest.MonkeyPatch()
    mp.setattr(driver, "compute_schedule", grab)
    try:
        _isl_program(cfg)
    finally:
        mp.undo()
    return captured["sdg"], captured["tree"], captured["bounds"]


def test_a_read_after_its_point_was_freed_is_caught() -> None:
    sdg, tree, bounds = _tree_of(_cfg())
    assert verify_order(sdg, tree, bounds)
    # free every point of every tensor some op reads, before anything runs
    frees: list[Node] = []
    for op_id in sdg.ops:
        for e in sdg.in_edges[op_id]:
            src = sdg.ops[e.src.op_id]
            dims = [v.name for v in src.domain.variables]
            body: Node = Free(TensorId(e.src.op_id, e.src.output_id), tuple(dims))
            for d in reversed(dims):
                body = Loop(d, "0", d.upper(), 1, body)
            frees.append(body)
    # every read point freed before the program runs: the first read of a made point fails
    with pytest.raises(ScheduleError, match="reads a point already freed"):
        verify_order(sdg, Seq([*frees, tree]), bounds)


def test_an_op_run_twice_at_one_point_is_caught() -> None:
    sdg, tree, bounds = _tree_of(_cfg())
    with pytest.raises(ScheduleError, match="runs twice"):
        verify_order(sdg, Seq([tree, tree]), bounds)


def test_the_budget_stops_the_check_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    """Past its budget the check stops (it used to stop quietly): one warning line says so
    and how far it got; a whole check logs nothing."""
    sdg, tree, bounds = _tree_of(_cfg())
    with caplog.at_level(logging.WARNING, logger="tempo.schedule.verify"):
        assert verify_order(sdg, tree, bounds)
        assert not caplog.records
        assert not verify_order(sdg, tree, bounds, budget=0)
    (rec,) = caplog.records
    assert rec.levelno == logging.WARNING and "\n" not in rec.getMessage()
    assert re.search(r"stopped early: its budget of 0 point reads .* ran out after \d+ op "
                     r"points \(\d+ of the \d+ ops run\)", rec.getMessage()), rec.getMessage()


@pytest.mark.slow
def test_isl_ast_of_the_schedule_tree_is_caught_on_ppo_epochs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The real wrong order this check is for (accept6 c13): isl's AST generated from the
    scheduler's tree, as before the fix in `scheduler.flattened`, read the vectorised
    samples of `act` at i = 1 before making them (a KeyError at run time on numpy)."""
    from tests.schedule.test_isl_ast_order import _run

    monkeypatch.setattr(scheduler, "flattened", lambda sched, context: sched)
    with pytest.raises(ScheduleError, match="bug in Tempo's compiler") as err:
        _run("numpy", True, validate_pipeline_stages=True)
    assert "test_isl_ast_order.py" in str(err.value)
