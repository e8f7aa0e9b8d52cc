"""torch.Tensor methods RecurrentTensor spells otherwise (accept8 mistakes8 s17/s18):
`x.masked_fill(m, v)` and `x.topk(k)` raised Python's bare AttributeError. They now raise a
NoSuchMethodError (a TempoError and an AttributeError, so hasattr stays False) naming the
user's line and what to write; the suggested spelling gives torch's values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import NoSuchMethodError, TempoError


@pytest.mark.parametrize("name, words", [("masked_fill", "RT.where(mask, value, x)"),
                                         ("topk", "x.sort(dim, descending=True)"),
                                         ("view", "x.reshape(shape)"),
                                         ("long", "x.cast(dtypes.int64)")])
def test_torch_method_names_say_what_to_write(name: str, words: str) -> None:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="numpy"), dim_names=("t",))
    with ctx:
        x = RT.random((4,), domain=(ctx.variables[0],))
        with pytest.raises(NoSuchMethodError) as info:
            getattr(x, name)
        assert not hasattr(x, name)
        with pytest.raises(AttributeError) as plain:
            x.no_such_thing  # noqa: B018
        assert not isinstance(plain.value, TempoError)
    msg = str(info.value)
    assert words in msg and "test_torch_method_names.py:" in msg, msg


def test_where_as_suggested_for_masked_fill_matches_torch() -> None:
    X = np.array([[0.2, -1.0, 3.0], [4.0, 0.5, -2.0]], np.float32)
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="torch"), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    out: dict[str, np.ndarray] = {}
    with ctx:
        x = RT.const(X).index(0, t)
        y = RT.where(x > 0.5, 0.0, x)
        y[0:T].sink_udf(lambda a: out.__setitem__("y", np.asarray(a).copy()))
    ctx.compile({T: 2}).execute()
    want = torch.tensor(X).masked_fill(torch.tensor(X) > 0.5, 0.0).numpy()
    np.testing.assert_array_equal(out["y"], want)
