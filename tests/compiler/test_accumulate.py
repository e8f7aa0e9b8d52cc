"""Running sums over time (`passes/accumulate.py`) and their shifted placement in the loop
(`schedule/loop_tree.py`): REINFORCE's gradient summed over the episode, with the n-step
return as weight (reads r[t:t+n]), is accumulated inside the rollout loop, n-1 steps late,
and equals the batched learner's result; with the Monte-Carlo return (reads r[t:T]) the
sum is left batched. The reference is the same program compiled without the pass."""

from __future__ import annotations

import numpy as np
import pytest

from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.systems import reinforce_tempo
from tempo.bench.systems.tempo_memory import NO_CAP, memory_config
from tempo.bench.timing import StatsLogger
from tempo.compiler.passes.accumulate import LOOP_TAG
from tempo.schedule.tree import Exec, walk

SMALL = dict(obs_shape=[3, 4, 4], num_envs=4, ep_len=16, iterations=3, num_layers=1,
             params_per_layer=8)


def _run(objective: str, backend: str, accumulate: bool) -> tuple[np.ndarray, object]:
    c = dict(reinforce_tempo.DEFAULTS)
    c.update(SMALL, objective=objective, backend=backend)
    log = StatsLogger()
    ctx, bounds = reinforce_tempo._program(c, log, {
        "enable_incrementalization": accumulate, "device_memory_cap_bytes": NO_CAP})
    exe = ctx.compile(bounds)
    exe.execute()
    return np.array([r["loss"] for _, r in sorted(log.rows.items())]), exe


def _accumulated(exe: object) -> bool:
    return any(any(t.startswith(LOOP_TAG) for t in op.tags)
               for op in exe.sdg.ops.values())  # type: ignore[attr-defined]


def _shifted(exe: object) -> set[str]:
    """Points of ops that run some steps after their own point (`(d1 - 2)`)."""
    return {p for n in walk(exe.schedule.tree) if isinstance(n, Exec)  # type: ignore[attr-defined]
            for p in n.point if " - " in p}


@pytest.mark.parametrize("backend", ["torch", "numpy"])
@pytest.mark.parametrize("n", [1, 3])
def test_td_gradient_is_accumulated_in_the_rollout_and_exact(n: int, backend: str) -> None:
    got, exe = _run(f"{n}_temporal_difference", backend, True)
    ref, ref_exe = _run(f"{n}_temporal_difference", backend, False)
    assert _accumulated(exe) and not _accumulated(ref_exe)
    # the per-step gradient of step t runs at step t + n - 1, in the same loop
    assert (f"(d1 - {n - 1})" in _shifted(exe)) == (n > 1)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)  # iterations 2, 3: the update
    peak = exe.memory_stats()["peak_bytes"]  # type: ignore[attr-defined]
    ref_peak = ref_exe.memory_stats()["peak_bytes"]  # type: ignore[attr-defined]
    assert peak is not None and ref_peak is not None and peak < 0.6 * ref_peak, (peak, ref_peak)


def test_monte_carlo_sum_is_not_accumulated() -> None:
    got, exe = _run("monte_carlo", "torch", True)  # the weight reads every later reward
    ref, _ = _run("monte_carlo", "torch", False)
    assert not _accumulated(exe) and not _shifted(exe)
    np.testing.assert_array_equal(got, ref)


def _compiled_mc(cap: int) -> object:
    """The E7 Monte-Carlo program (observations of 384 KiB per step, 16 steps) compiled
    as the bench does under `cap` with swap on."""
    c = dict(reinforce_tempo.DEFAULTS)
    c.update(obs_shape=[3, 64, 64], num_envs=8, ep_len=16, iterations=2, num_layers=1,
             params_per_layer=8, objective="monte_carlo")
    acct = DeviceMemoryAccountant(cap_bytes=cap)
    ctx, bounds = reinforce_tempo._program(c, StatsLogger(), memory_config(acct))
    return ctx.compile(bounds)


def test_monte_carlo_is_streamed_only_when_its_batched_learner_cannot_fit_the_cap() -> None:
    """The batched learner's weight gradient over 16 steps needs ~12 MiB at once (the
    stacked observations and the per-step products): a 64 MiB cap holds it, so the sum
    stays batched (and swapping covers the rest); a 6 MiB cap cannot, so the sum is
    accumulated in a loop of its own that the swap streams (its result is checked
    against the uncapped run in tests/bench/test_reinforce_tempo.py)."""
    assert not _accumulated(_compiled_mc(64 << 20))
    streamed = _compiled_mc(6 << 20)
    assert _accumulated(streamed) and not _shifted(streamed)  # after the rollout, not in it
