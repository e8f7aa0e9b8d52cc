"""How the bench's Tempo systems measure memory: with Tempo's own accountant (the stores'
bytes, ARCHITECTURE §7), under the point's device cap, with swapping on when a cap is set;
after a run the per-step timeline and the peak are replayed into the bench accountant, and
the host pool and swap traffic are returned with the results."""

from __future__ import annotations

from typing import Any

from tempo.bench.memory import DeviceMemoryAccountant

NO_CAP = 1 << 50  # a cap nothing reaches: turns Tempo's accounting on without limiting it
SWAP_BYTES_MIN = 256 << 10  # an observation batch of the RL points (E7: 384 KiB) swaps


def memory_config(acct: DeviceMemoryAccountant, reserved: int = 0) -> dict[str, Any]:
    """ExecutionConfig fields for a point: accounting always on; under a cap (less the
    `reserved` bytes the harness charges itself) swapping moves points to the host pool,
    and tensors above an eighth of the cap are computed in blocks (incrementalisation),
    so that no single op needs more than the device holds."""
    cap = acct.cap_bytes
    if cap is None:
        return {"device_memory_cap_bytes": NO_CAP}
    cap = max(cap - reserved, 0)
    return {"device_memory_cap_bytes": cap, "enable_swap": True,
            "swap_bytes_min": SWAP_BYTES_MIN, "incrementalize_mem_threshold": max(cap // 8, 1)}


def report_memory(exe: Any, acct: DeviceMemoryAccountant, name: str = "tempo_stores",
                  step0: int = 0) -> dict[str, Any]:
    """Replay the last run's timeline and peak into `acct`; Tempo's memory statistics."""
    for step, (live, _host) in enumerate(exe.memory_timeline()):
        acct.alloc(name, live)
        acct.tick(step0 + step)
    stats = exe.memory_stats()
    acct.alloc(name, stats["peak_bytes"] or 0)
    return {"tempo_peak_device_bytes": stats["peak_bytes"],
            "host_peak_bytes": stats["host_peak_bytes"],
            "swapped_bytes": stats["swapped_bytes"], "fetched_bytes": stats["fetched_bytes"],
            "prefetched_bytes": stats["prefetched_bytes"],
            "demand_fetched_bytes": stats["demand_fetched_bytes"]}
