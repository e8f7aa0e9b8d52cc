"""Reads past the end at a point given by bounds alone (`x[T]`): the message said 'when
always' and suggested `ie.min(T, T - 1)`; it says 'at every point' and 'at most T - 1'."""

from __future__ import annotations

import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import IndexExprError


@pytest.mark.parametrize("offset", [0, 2])
def test_reading_at_the_bound_names_the_last_point(offset: int) -> None:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="numpy"), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        x = RT.ones((3,)) * t
        (x[T + offset] + 1.0).sink_udf(lambda v: None)
    with pytest.raises(IndexExprError) as info:
        ctx.compile({T: 4})
    msg = str(info.value)
    assert "at every point" in msg and "when always" not in msg
    assert "Use an index of at most T - 1" in msg and "ie.min" not in msg
    assert "test_explain_read_past_the_end.py:" in msg
