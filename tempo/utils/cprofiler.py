"""`Profiler`: a cProfile of the Python side of a region (compile time, dispatch)."""

from __future__ import annotations

import cProfile
import io
import os
import pstats

from tempo.core.configs import ExecutionConfig
from tempo.utils.region_profiler import RegionProfiler


class Profiler(RegionProfiler):
    """cProfile inside `with`; writes `<path>/<name>.prof` (snakeviz, pstats) and
    `<path>/<name>.txt`, the 50 costliest functions by cumulative time."""

    def __init__(self, where: ExecutionConfig | str | None = None,
                 name: str = "cprofile") -> None:
        super().__init__(where, name)
        self.prof = cProfile.Profile()

    def start(self) -> None:
        self.prof.enable()

    def stop(self) -> str:
        self.prof.disable()
        out = os.path.join(self.dir, f"{self.name}.prof")
        self.prof.dump_stats(out)
        text = io.StringIO()
        pstats.Stats(self.prof, stream=text).sort_stats("cumulative").print_stats(50)
        with open(os.path.join(self.dir, f"{self.name}.txt"), "w") as f:
            f.write(text.getvalue())
        return out
