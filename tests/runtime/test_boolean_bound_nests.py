"""A boolean bound (API §7 item 10) seen by ops over the ended dimension that the schedule
puts in another loop nest than the stop test (acceptance r21): x over (b, t) runs in a
nest over (b, t) after the loop over t that tests `done`. That nest's loops were bounded
by the maximum, so it ran past the end (reading points never made, or handing a sink 500
points where 4 exist). Sinks must see exactly the computed points, in every run, also when
the stop moves between runs."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

B_, MAX, H = 2, 500, 3
CONFIGS = [(backend, on) for backend in ("torch", "jax", "numpy") for on in (True, False)]


def config(backend: str, on: bool) -> ExecutionConfig:
    """The default config, with vectorisation and fusion both on or both off."""
    return dataclasses.replace(ExecutionConfig(dev="cpu", backend=backend),
                               enable_vectorization=on, enable_fusion=on)


def _array(backend: str, v: np.ndarray) -> Any:
    if backend == "torch":
        import torch

        return torch.from_numpy(v)
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(v)
    return v


def _x(b: int, t: int) -> np.ndarray:
    return np.full(H, b + 10.0 * t, np.float32)


@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_sinks_over_an_ended_dim_in_another_nest_see_the_computed_points(
        backend: str, on: bool) -> None:
    ctx = TempoContext(config(backend, on), num_dims=2)
    (b, B), (t, T) = ctx.variables_and_bounds
    limit = [3]  # the episode ends at the first t >= limit (changed between runs)
    seen: dict[str, list] = {"block": [], "row": [], "sum": [], "points": []}
    with ctx:
        done = RT.source_with_ts_udf(lambda ts: _array(backend, np.array(ts[t] >= limit[0])),
                                     (), dtypes.bool_, domain=(t,))
        x = RT.ones((H,)) * RT.lift(b).cast(dtypes.float32) \
            + RT.lift(t).cast(dtypes.float32) * 10.0
        x[0:B, 0:T].sink_udf(lambda v: seen["block"].append(np.asarray(v)))
        x[0, 0:T].sink_udf(lambda v: seen["row"].append(np.asarray(v)))
        x[0:B, 0:T].sum((0, 1)).sink_udf(lambda v: seen["sum"].append(np.asarray(v)))
        (x * 2.0).sink_with_ts_udf(
            lambda v, ts: seen["points"].append((ts[b], ts[t], np.asarray(v))))
    exe = ctx.compile({B: B_, T: (MAX, done)})
    for lim in (3, 6, 2):
        limit[0] = lim
        for v in seen.values():
            v.clear()
        exe.execute()
        n = lim + 1  # t = lim is the first done point: it exists, nothing after it
        want = np.stack([np.stack([_x(i, k) for k in range(n)]) for i in range(B_)])
        assert len(seen["block"]) == 1
        np.testing.assert_array_equal(seen["block"][0], want)
        assert len(seen["row"]) == 1
        np.testing.assert_array_equal(seen["row"][0], want[0])
        np.testing.assert_allclose(seen["sum"][0], want.sum((0, 1)), rtol=1e-6)
        assert sorted((i, k) for i, k, _ in seen["points"]) == \
            [(i, k) for i in range(B_) for k in range(n)]
        for i, k, v in seen["points"]:
            np.testing.assert_array_equal(v, _x(i, k) * 2.0)
        assert exe.dimension_extents() == {t.name: n}


def _acc(i: int, k: int) -> float:
    """acc[i, 0] = i, acc[i, t + 1] = acc * 2 + 1, in numpy's float32."""
    v = np.float32(i)
    for _ in range(k):
        v = np.float32(v * np.float32(2.0) + np.float32(1.0))
    return float(v)


@pytest.mark.parametrize("stop", ["t_only", "per_i"])
@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_work_that_never_reads_the_stop_runs_only_at_existing_points(
        backend: str, on: bool, stop: str) -> None:
    """accept4 a16: the stop depends on symbols only and nothing reads it, so nothing
    ordered the work at t after the stop test at t - 1: a per-point sink was called at
    every point up to the maximum (1500 times for 12 points), or read a point of the
    (t,) nest that was never made. Episode i has points t = 0..2 (`t >= 2`) or 0..i+2
    (`t - i >= 2`: the stop is per episode)."""
    ctx = TempoContext(config(backend, on), dim_names=("i", "t"))
    (i, I_), (t, T) = ctx.variables_and_bounds
    log: list[tuple[int, int, float]] = []
    with ctx:
        ti = RT.from_symbol(t) - (RT.from_symbol(i) if stop == "per_i" else 0)
        done = ti >= 2
        acc = RT.placeholder((), dtypes.float32, domain=(i, t))
        acc[i, 0] = RT.from_symbol(i).cast(dtypes.float32)
        acc[i, t + 1] = acc * 2.0 + 1.0
        acc.sink_with_ts_udf(lambda v, ts: log.append((ts[i], ts[t], float(np.asarray(v)))))
    exe = ctx.compile({I_: 3, T: done})
    for _ in range(2):
        log.clear()
        exe.execute()
        last = {k: 2 + (k if stop == "per_i" else 0) for k in range(3)}
        assert sorted((a, b) for a, b, _ in log) == \
            [(k, n) for k in range(3) for n in range(last[k] + 1)]
        for a, b, v in log:
            assert v == _acc(a, b), (a, b, v)
