"""`TorchProfiler`: a `torch.profiler` trace of a region, written as a Chrome trace."""

from __future__ import annotations

import os

import torch

from tempo.core.configs import ExecutionConfig
from tempo.utils.region_profiler import RegionProfiler


class TorchProfiler(RegionProfiler):
    """Profiles CPU (and CUDA, when present) activity inside `with`; writes
    `<path>/<name>.json` (open it in chrome://tracing or Perfetto)."""

    def __init__(self, where: ExecutionConfig | str | None = None,
                 name: str = "torch_profile") -> None:
        super().__init__(where, name)
        self.prof: torch.profiler.profile | None = None

    def start(self) -> None:
        acts = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        self.prof = torch.profiler.profile(activities=acts, record_shapes=True)
        self.prof.__enter__()

    def stop(self) -> str:
        assert self.prof is not None
        self.prof.__exit__(None, None, None)
        out = os.path.join(self.dir, f"{self.name}.json")
        self.prof.export_chrome_trace(out)
        return out
