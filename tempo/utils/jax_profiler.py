"""`JaxProfiler`: a `jax.profiler` trace of a region (TensorBoard/Perfetto format)."""

from __future__ import annotations

import os

from tempo.core.configs import ExecutionConfig
from tempo.utils.region_profiler import RegionProfiler


class JaxProfiler(RegionProfiler):
    """Traces jax activity inside `with` into `<path>/<name>/` (`plugins/profile/<run>/`
    holds `*.trace.json.gz` and `*.xplane.pb`; open with TensorBoard or Perfetto)."""

    def __init__(self, where: ExecutionConfig | str | None = None,
                 name: str = "jax_profile") -> None:
        super().__init__(where, name)

    def start(self) -> None:
        import jax

        self.out = os.path.join(self.dir, self.name)
        jax.profiler.start_trace(self.out)

    def stop(self) -> str:
        import jax

        jax.profiler.stop_trace()
        return self.out
