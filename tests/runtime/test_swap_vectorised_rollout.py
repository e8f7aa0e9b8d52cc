"""E6's shape at a small scale: a PPO rollout whose observations outgrow the device cap
must still run under it with swapping on (BENCHMARKS §7.7: "only Tempo completes beyond
the device cap").

With swap and incrementalisation on, vectorisation under a cap must not refuse the groups
whose held bytes the memory passes relieve: refusing the learner over t and the envs over
b (41269cf) left each env's observation (12 KiB here, 192 KiB in E6) below the swap's point
size, so nothing could move to the host and the run raised TempoMemoryError at the cap
with 0 bytes swapped. The capped run's losses equal the uncapped run's (same program,
same seed; the uncapped program is checked against torch eager in the PPO tests).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tempo.bench.baselines.ppo_cleanrl import DEFAULTS
from tempo.bench.systems.ppo_tempo import _program
from tempo.bench.timing import StatsLogger

CAP = 12 << 20  # observations alone: 16 envs x 64 steps x 12 KiB = 12 MiB, plus weights


def _losses(memory: dict[str, Any]) -> tuple[list[float], dict[str, Any]]:
    c = dict(DEFAULTS)
    c.update(num_envs=16, ep_len=64, obs_shape=(3, 32, 32), iterations=2)
    log = StatsLogger()
    ctx, bounds = _program(c, "torch", log, memory)
    exe = ctx.compile(bounds)
    exe.execute()
    return [log.rows[i]["loss"] for i in sorted(log.rows)], exe.memory_stats()


def test_rollout_beyond_the_cap_swaps_and_matches_the_uncapped_run() -> None:
    capped, stats = _losses({"device_memory_cap_bytes": CAP, "enable_swap": True,
                             "swap_bytes_min": 64 << 10,
                             "incrementalize_mem_threshold": CAP // 8})
    assert stats["peak_bytes"] is not None and stats["peak_bytes"] <= CAP, stats
    assert stats["swapped_bytes"] > 0, stats  # the observations did not fit: some moved
    free, _ = _losses({})
    assert len(capped) == len(free) == 2
    np.testing.assert_allclose(capped, free, rtol=1e-5, atol=1e-6)
