"""The region profilers of `tempo.utils` (API.md §0) write their trace under the config's
path, and the profiled program still computes what torch computes."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.utils.cprofiler import Profiler
from tempo.utils.jax_profiler import JaxProfiler
from tempo.utils.torch_profiler import TorchProfiler


def _program(backend: str, tmp: Path) -> tuple[ExecutionConfig, object, list]:
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend, path=str(tmp) + "/")
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: list = []
    with ctx:
        (RT.from_symbol(t).cast("float32").exp()).sink_udf(lambda v: got.append(float(v)))
    return cfg, ctx.compile({T: 3}), got


@pytest.mark.parametrize(("prof", "backend"), [(TorchProfiler, "torch"), (JaxProfiler, "jax"),
                                               (Profiler, "numpy")])
def test_profiler_writes_under_the_config_path(prof: type, backend: str, tmp_path: Path) -> None:
    cfg, exe, got = _program(backend, tmp_path)
    with prof(cfg) as p:
        exe.execute()  # type: ignore[attr-defined]
    np.testing.assert_allclose(got, torch.exp(torch.arange(3.0)).tolist(), rtol=1e-6)
    assert p.output is not None and p.output.startswith(str(tmp_path))
    assert os.path.exists(p.output)
    if prof is TorchProfiler:
        assert "traceEvents" in json.loads(Path(p.output).read_text())
    if prof is JaxProfiler:
        assert any(f.endswith(".trace.json.gz") for _, _, fs in os.walk(p.output) for f in fs)
    if prof is Profiler:
        assert "cumulative" in Path(p.output[:-5] + ".txt").read_text()


def test_default_path_is_the_active_context_config(tmp_path: Path) -> None:
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), path=str(tmp_path / "run") + "/")
    with TempoContext(cfg, num_dims=0), Profiler(name="p") as p:
        sum(range(10))
    assert p.output == str(tmp_path / "run" / "p.prof")
