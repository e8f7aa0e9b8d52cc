"""Compile time of programs that fall back to isl's scheduler is bounded: isl's search
(in its worker process) stops after `Tuning.isl_schedule_cpu_s` CPU seconds and compile
raises ScheduleTimeError naming the user's lines of the ops Tempo's own scheduler could
not order (accept6 c13 ran isl for 107 s at B = 2 and more than 55 minutes at B = 64,
with no way to tell why). The program here is test_isl_ast_order's (PPO epochs with
merge_fixed_reads off), whose isl schedule takes ~15-20 CPU-s."""

from __future__ import annotations

import islpy as isl
import pytest

from tempo.core.configs import TUNING, tuned
from tempo.core.errors import ScheduleError, ScheduleTimeError, TempoError
from tempo.schedule import isl_worker
from tests.schedule.test_isl_ast_order import _run


def test_the_default_budget_is_generous() -> None:
    """Far above the slowest isl fallback of the tests and benches (~20 CPU-s)."""
    assert TUNING.isl_schedule_cpu_s is not None and TUNING.isl_schedule_cpu_s >= 60


def test_isl_past_its_budget_names_the_ops_it_could_not_order() -> None:
    with tuned(isl_schedule_cpu_s=0.3), pytest.raises(ScheduleTimeError) as err:
        _run("numpy", False)
    msg = str(err.value)
    assert isinstance(err.value, ScheduleError) and isinstance(err.value, TempoError)
    assert "isl's scheduler" in msg and "CPU-s" in msg
    assert "`act = dist.sample()` at test_isl_ast_order.py:" in msg, msg
    assert "isl_schedule_cpu_s" in msg  # the advice says how to allow more
    assert "test_isl_ast_order.py" in msg.splitlines()[-1]  # the user's line


def _constraints() -> isl.ScheduleConstraints:
    dom = isl.UnionSet("[N] -> { A[i] : 0 <= i < N; B[i] : 0 <= i < N }")
    dep = isl.UnionMap("[N] -> { A[i] -> B[i] }")
    return isl.ScheduleConstraints.on_domain(dom).set_validity(dep)


def test_a_quick_schedule_is_not_stopped() -> None:
    """A schedule isl finds at once comes back under a small limit."""
    assert isl_worker.compute_schedule(_constraints(), 5.0) is not None


def test_a_worker_past_the_limit_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """isl's call stubbed by a busy loop in the worker: stopped after ~0.2 CPU-s."""
    def spin(self: isl.ScheduleConstraints) -> None:
        while True:
            pass

    monkeypatch.setattr(isl.ScheduleConstraints, "compute_schedule", spin)
    with pytest.raises(isl_worker.IslTimeout) as err:
        isl_worker.compute_schedule(_constraints(), 0.2)
    assert 0.2 < err.value.spent < 5
