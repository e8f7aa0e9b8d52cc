"""CPU seconds that include the forked isl worker.

The scheduler runs isl in a forked child (schedule/isl_worker.py) so that Ctrl-C is
immediate; `time.process_time()` counts only this process and so would leave out the
scheduler's CPU time. The child is waited for before `compile()` returns, so its time is in
`os.times()`'s children fields by then."""

from __future__ import annotations

import os


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
