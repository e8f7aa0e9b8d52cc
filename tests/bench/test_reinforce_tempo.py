"""The E7 Tempo REINFORCE system: under a device cap it swaps (bytes through the host pool,
device peak within the cap) without changing a number, and its objectives are what their
names say (the n-step return with n = T is the MC return)."""

from __future__ import annotations

import pytest

from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.systems.reinforce_tempo import horizon, train_tempo
from tempo.bench.timing import StatsLogger

SMALL = dict(obs_shape=[3, 64, 64], num_envs=8, ep_len=16, iterations=2, num_layers=1,
             params_per_layer=8)  # observation batches of 384 KiB: above the swap threshold


def _losses(objective: str, cap: int | None, backend: str = "torch"
            ) -> tuple[list[float], dict, DeviceMemoryAccountant]:
    acct, log = DeviceMemoryAccountant(cap_bytes=cap), StatsLogger()
    res = train_tempo(dict(SMALL, objective=objective, backend=backend), acct, log)
    return [r["loss"] for _, r in sorted(log.rows.items())], res, acct


CAP = 6 << 20  # above TD(n)'s peak (~4-5 MiB here), below Monte-Carlo's (~10 MiB)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_under_one_cap_monte_carlo_swaps_and_td_does_not(backend: str) -> None:
    """The E7 claim in small: TD(n)'s gradient is summed inside the rollout, so its peak
    stays far under the cap and no byte moves to the host (the schedule's offloads run
    only under pressure); Monte-Carlo's learner needs the whole episode, so under the
    same cap it swaps. Neither changes a number."""
    free, free_res, _ = _losses("monte_carlo", None, backend)
    assert free_res["swapped_bytes"] == 0 and free_res["tempo_peak_device_bytes"] > CAP
    capped, res, _ = _losses("monte_carlo", CAP, backend)
    assert capped == pytest.approx(free, rel=1e-6)  # swapping changes no number
    assert res["swapped_bytes"] > 0 and res["host_peak_bytes"] > 0
    assert 0 < res["tempo_peak_device_bytes"] <= CAP
    td_free, td_free_res, _ = _losses("3_temporal_difference", None, backend)
    td, td_res, _ = _losses("3_temporal_difference", CAP, backend)
    assert td == pytest.approx(td_free, rel=1e-6)
    assert td_res["swapped_bytes"] == 0 and td_res["host_peak_bytes"] == 0
    assert td_res["tempo_peak_device_bytes"] == td_free_res["tempo_peak_device_bytes"]
    assert td_res["tempo_peak_device_bytes"] < res["tempo_peak_device_bytes"]
    assert td != pytest.approx(free, rel=1e-3)
    if backend == "torch":
        td_t, _, _ = _losses("16_temporal_difference", None)  # n = T: the MC return
        assert td_t == pytest.approx(free, rel=1e-6)


def test_objective_names() -> None:
    assert horizon("monte_carlo") is None and horizon("64_temporal_difference") == 64
    with pytest.raises(ValueError):
        horizon("td")
