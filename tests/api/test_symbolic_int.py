"""`range(T)` over a symbolic bound (a PyTorch habit: a Python loop over time) raised
Python's bare "TypeError: 'Symbol' object cannot be interpreted as an integer"; it is a
TempoError naming the bound and the user's line, and still a TypeError (numpy and torch
probe for ints by catching TypeError). A constant expression is an int."""

from __future__ import annotations

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import SymbolicIntError, TempoError


def test_range_over_a_bound_names_it_and_the_line() -> None:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="numpy"), dim_names=("b", "step"))
    ((b, B), (s, S)) = ctx.variables_and_bounds
    with ctx:
        with pytest.raises(TempoError, match=r"`STEP` is symbolic(.|\n)*x\[0:STEP\]"
                                             r"(.|\n)*test_symbolic_int.py:\d+: +range\(S\)"):
            range(S)
        with pytest.raises(SymbolicIntError, match=r"`\(step \+ 1\)` is symbolic"):
            [0, 1, 2][s + 1]
        with pytest.raises(TypeError):  # what probing code catches
            np.broadcast_shapes((S,), (1,))
        x = RT.ones((3,))
        assert x.shape[0] == 3
    assert list(range(ie.ConstInt(3))) == [0, 1, 2]
    assert [10, 20, 30][ie.ConstInt(2) - 1] == 20
