"""The E7 Tempo REINFORCE system: under a device cap it swaps (bytes through the host pool,
device peak within the cap) without changing a number, and its objectives are what their
names say (the n-step return with n = T is the MC return)."""

from __future__ import annotations

import pytest

from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.systems.reinforce_tempo import horizon, train_tempo
from tempo.bench.timing import StatsLogger

SMALL = dict(obs_shape=[3, 64, 64], num_envs=8, ep_len=8, iterations=2, num_layers=1,
             params_per_layer=8)  # observation batches of 384 KiB: above the swap threshold


def _losses(objective: str, cap: int | None) -> tuple[list[float], dict, DeviceMemoryAccountant]:
    acct, log = DeviceMemoryAccountant(cap_bytes=cap), StatsLogger()
    res = train_tempo(dict(SMALL, objective=objective), acct, log)
    return [r["loss"] for _, r in sorted(log.rows.items())], res, acct


def test_monte_carlo_swaps_under_its_cap_and_matches_td_over_the_whole_episode() -> None:
    free, free_res, _ = _losses("monte_carlo", None)
    assert free_res["swapped_bytes"] == 0
    # the learner reads whole episodes at once, so its peak is the floor; under any cap
    # the schedule swaps the rollout's points between the stages
    capped, res, acct = _losses("monte_carlo", 1 << 40)
    assert capped == pytest.approx(free, rel=1e-6)  # swapping changes no number
    assert res["swapped_bytes"] > 0 and res["host_peak_bytes"] > 0
    assert 0 < res["tempo_peak_device_bytes"] <= free_res["tempo_peak_device_bytes"]
    td_t, _, _ = _losses("8_temporal_difference", None)  # n = T: the MC return
    assert td_t == pytest.approx(free, rel=1e-6)
    td_1, _, _ = _losses("1_temporal_difference", None)
    assert td_1 != pytest.approx(free, rel=1e-3)


def test_objective_names() -> None:
    assert horizon("monte_carlo") is None and horizon("64_temporal_difference") == 64
    with pytest.raises(ValueError):
        horizon("td")
