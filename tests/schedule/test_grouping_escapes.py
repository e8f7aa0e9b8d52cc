"""A read that moves one way along t (`a[t-1]`) cannot bring a path back to its start along
t — unless the path passes an op without t (a sum over every t, read back at each t),
where its coordinate is lost. Joining two ops across such a path makes a group wait on
itself: isl's grouping (`schedule.grouping.group_ops`, the fallback scheduler) then found
no schedule and compiled again ungrouped, and the grouping pass's regions
(`compiler.passes.grouping`, see `grouping_escapes`) failed the compile with "could not
find an order". Results against numpy."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.schedule import scheduler

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from programs import all_passes, run_once  # noqa: E402

T_ = 6
XS = np.random.default_rng(3).standard_normal((T_, 4)).astype(np.float32)


def _build(tT: Any) -> dict[str, RT]:
    t, T = tT
    a = RT.source_with_ts_udf(lambda ts: XS[ts[t]], (4,), dtypes.float32, domain=(t,)) * 2.0
    x = RT.placeholder((4,), dtypes.float32, domain=(t,))
    x[0] = RT.zeros((4,), dtypes.float32)
    x[True] = a[t - 1] + 1.0  # one step back along t: every read of t looks back
    total = x[0:T].sum()  # no t: it reads every t of x ...
    return {"b": (a * total).tanh()}  # ... and a -> b at the same t would join a and b


def _reference() -> np.ndarray:
    a = XS * np.float32(2.0)
    x = np.concatenate([np.zeros((1, 4), np.float32), a[:-1] + np.float32(1.0)])
    return np.tanh(a * x.sum())


def _cfg(backend: str, **kw: Any) -> ExecutionConfig:
    return dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend, dev="cpu", **kw)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_isl_grouping_does_not_join_across_a_sum_over_t(
        backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    build = scheduler.build_program

    def counted(*args: Any, group: bool = True, **kw: Any) -> Any:
        calls.append(group)
        return build(*args, group=group, **kw)

    monkeypatch.setattr(scheduler, "FORCE_ISL", True)
    monkeypatch.setattr(scheduler, "build_program", counted)
    got, _ = run_once(_cfg(backend), 1, _build, {0: T_})
    np.testing.assert_allclose(np.asarray(got["b"]), _reference(), rtol=1e-5)
    assert calls == [True], "the grouped program had no schedule: isl ran again ungrouped"


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_regions_do_not_join_across_a_sum_over_t(backend: str) -> None:
    cfg = dataclasses.replace(all_passes(_cfg(backend)), enable_vectorization=False)
    got, _ = run_once(cfg, 1, _build, {0: T_})
    np.testing.assert_allclose(np.asarray(got["b"]), _reference(), rtol=1e-5)
