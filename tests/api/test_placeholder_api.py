"""Placeholder API of API.md §3.5 beyond assignment: `clear_placeholder_branches()`."""

from __future__ import annotations

import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.dtype import dtypes
from tempo.core.errors import DefinitionError


def test_clear_placeholder_branches_then_redefine(cfg) -> None:  # type: ignore[no-untyped-def]
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: list[float] = []
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        x[True] = RT.const(5.0)
        x.clear_placeholder_branches()
        x[0] = RT.const(1.0)
        x[True] = x[t - 1] * 2.0
        x.sink_udf(lambda v: got.append(float(v)))
        with pytest.raises(DefinitionError):
            (x + 1.0).clear_placeholder_branches()
    ctx.compile({T: 4}).execute()
    assert got == (2.0 ** torch.arange(4.0)).tolist()
