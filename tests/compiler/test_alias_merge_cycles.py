"""Two placeholders that need each other at the same point (acceptance accept5a, user
mistake n13): `u[True] = v + 1.0; v[True] = u * 2.0`. Under the default config the
algebraic pass aliased both one-branch merges to their values, leaving a cycle with no
merge (add <-> mul): the scheduler's same-point check never saw it, the grouping pass fused
the two ops into one region, and the run failed with "BackendError: cannot access local
variable 'v1_0'" (an internal name, at run time). alias_merge now keeps a merge whose value
reads it back through no other merge, so the scheduler names the user's definition."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import ScheduleError

CONFIGS = [(backend, on) for backend in ("torch", "jax", "numpy") for on in (True, False)]


def config(backend: str, on: bool) -> ExecutionConfig:
    return dataclasses.replace(ExecutionConfig(dev="cpu", backend=backend),
                               enable_vectorization=on, enable_fusion=on)


@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_mutual_same_point_definitions_are_a_schedule_error(backend: str, on: bool) -> None:
    ctx = TempoContext(config(backend, on), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        u = RT.placeholder((), dtypes.float32, domain=(t,))
        v = RT.placeholder((), dtypes.float32, domain=(t,))
        u[True] = v + 1.0
        v[True] = u * 2.0
        u[0:T].sink_udf(lambda x: None)
    with pytest.raises(ScheduleError, match=r"same point") as info:
        ctx.compile({T: 3}).execute()
    msg = str(info.value)
    assert "test_alias_merge_cycles.py" in msg and ("u * 2.0" in msg or "v + 1.0" in msg)
    assert "v1_0" not in msg and "#" not in msg


@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_mutual_definitions_at_earlier_points_still_run(backend: str, on: bool) -> None:
    """The same pair reading each other one step back (with base cases) is a recurrence:
    its one-branch merges still alias and the values are numpy's."""
    ctx = TempoContext(config(backend, on), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    got: dict[str, np.ndarray] = {}
    with ctx:
        u = RT.placeholder((), dtypes.float32, domain=(t,))
        v = RT.placeholder((), dtypes.float32, domain=(t,))
        u[0] = RT.const(1.0)
        u[True] = v[t - 1] + 1.0
        v[True] = u * 2.0
        u[0:T].sink_udf(lambda x: got.__setitem__("u", np.asarray(x)))
        v[0:T].sink_udf(lambda x: got.__setitem__("v", np.asarray(x)))
    ctx.compile({T: 5}).execute()
    uu, vv = [1.0], [2.0]
    for _ in range(4):
        uu.append(vv[-1] + 1.0)
        vv.append(uu[-1] * 2.0)
    np.testing.assert_allclose(got["u"], uu)
    np.testing.assert_allclose(got["v"], vv)
