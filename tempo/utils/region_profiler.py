"""The base of the region profilers of `tempo.utils` (`TorchProfiler`, `JaxProfiler`,
`Profiler`): a context manager that profiles the code inside it and writes the result
under a run directory, by default the active (or given) config's `path`."""

from __future__ import annotations

import abc
import os
from typing import Any

from tempo.core.configs import ExecutionConfig, get_default_path


def profile_dir(where: ExecutionConfig | str | None) -> str:
    """The directory a profile goes to: a config's `path`, a path, or else the active
    context's config path (the process's default run path outside a context)."""
    if isinstance(where, ExecutionConfig):
        path = where.path
    elif isinstance(where, str):
        path = where
    else:
        from tempo.api.tempo_context_manager import _stack

        stack = _stack()
        path = stack[-1].execution_config.path if stack else get_default_path()
    os.makedirs(path, exist_ok=True)
    return path


class RegionProfiler(abc.ABC):
    """`with Profiler(cfg): exe.execute()` profiles the run; `output` is the written file."""

    def __init__(self, where: ExecutionConfig | str | None = None, name: str = "profile"):
        self.where = where
        self.name = name
        self.output: str | None = None

    def __enter__(self) -> RegionProfiler:
        self.dir = profile_dir(self.where)
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.output = self.stop()

    @abc.abstractmethod
    def start(self) -> None: ...

    @abc.abstractmethod
    def stop(self) -> str:
        """Stop profiling and write the profile; returns the written path."""
