"""`x.init = v` written after `x[True] = x.previous + ...` (accept8 mistakes8b t04): the
init branch is never taken (the first true branch wins), and the catch-all then reads x at
the origin's wrap-around point: the compile failed with "could not find an order ... bug in
Tempo's compiler". A definition through `x.init` now gets the same check as `x[0] = v` after
an unconditional branch (a DefinitionError at the user's line); in the right order the
program gives the row-major running count."""

from __future__ import annotations

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import DefinitionError


def test_init_after_the_catch_all_is_a_definition_error() -> None:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="numpy"), dim_names=("b", "t"))
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=ctx.variables)
        x[True] = x.previous + 1.0
        with pytest.raises(DefinitionError) as info:
            x.init = RT.const(0.0)
    msg = str(info.value)
    assert "never used" in msg and "x[True] = x.previous + 1.0" in msg, msg
    assert "test_init_order.py:" in msg and "x.init = RT.const(0.0)" in msg, msg


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_init_first_counts_in_row_major_order(backend: str) -> None:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend=backend), dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    out: dict[str, np.ndarray] = {}
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(b, t))
        x.init = RT.const(0.0)
        x[True] = x.previous + 1.0
        x[0:B, 0:T].sink_udf(lambda a: out.__setitem__("x", np.asarray(a).copy()))
    ctx.compile({B: 2, T: 3}).execute()
    np.testing.assert_array_equal(out["x"], np.arange(6, dtype=np.float32).reshape(2, 3))
