"""`tempo.utils.make_sink` (API.md §0): sinks that collect a program's values."""

from __future__ import annotations

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.utils.make_sink import make_sink, make_step_by_step_sink


def test_make_sink_collects(cfg) -> None:  # type: ignore[no-untyped-def]
    store: dict = {}
    ctx = TempoContext(cfg, num_dims=1)
    (t, T), = ctx.variables_and_bounds
    with ctx:
        RT.from_symbol(t).sink_udf(make_step_by_step_sink("t", store))
        RT.from_symbol(t).sink_udf(make_sink("last", store))
    exe = ctx.compile({T: 3})
    exe.execute()
    assert [int(v) for v in store["t"]] == [0, 1, 2]
    assert int(store["last"]) == 2
