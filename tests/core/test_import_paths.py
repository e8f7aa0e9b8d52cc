"""The user-facing import paths of API.md §0 that the core provides."""

from __future__ import annotations

import importlib

import pytest

PATHS = [
    ("tempo", "TempoError"),
    ("tempo.api", "RecurrentTensor"), ("tempo.api", "TempoContext"), ("tempo.api", "min"),
    ("tempo.api", "max"),
    ("tempo.api.recurrent_tensor", "RecurrentTensor"), ("tempo.api.recurrent_tensor", "lift"),
    ("tempo.api.recurrent_tensor", "sink_udf"), ("tempo.api.recurrent_tensor", "dtypes"),
    ("tempo.api.recurrent_tensor", "MaybeRecurrentTensor"),
    ("tempo.api.tempo_context_manager", "TempoContext"),
    ("tempo.api.tempo_context_manager", "get_active_ctx_manager"),
    ("tempo.core.index_expr", "Symbol"), ("tempo.core.configs", "ExecutionConfig"),
    ("tempo.core.configs", "get_default_path"), ("tempo.core.dtype", "dtypes"),
    ("tempo.core.dtype", "DataType"), ("tempo.core.utils", "make_symbols"),
    ("tempo.core.domain", "Domain"), ("tempo.core.domain", "DomainLike"),
    ("tempo.core.shape", "Shape"), ("tempo.core.shape", "StaticShape"),
    ("tempo.core.device", "device"), ("tempo.core.dl_backend", "DLBackend"),
    ("tempo.runtime.executor.executor", "Executor"),
    ("tempo.utils.make_sink", "make_sink"), ("tempo.utils.make_sink", "make_step_by_step_sink"),
]


@pytest.mark.parametrize(("module", "name"), PATHS)
def test_import_path(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name)


def test_make_sink_collects(cfg) -> None:
    from tempo.api import RecurrentTensor as RT
    from tempo.api import TempoContext
    from tempo.utils.make_sink import make_step_by_step_sink

    store: dict = {}
    ctx = TempoContext(cfg, num_dims=1)
    (t, T), = ctx.variables_and_bounds
    with ctx:
        RT.from_symbol(t).sink_udf(make_step_by_step_sink("t", store))
    exe = ctx.compile({T: 3})
    exe.execute()
    assert [int(v) for v in store["t"]] == [0, 1, 2]
