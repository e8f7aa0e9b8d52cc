"""UDF results are checked against their declaration, but only mistakes are refused: a wider
float (numpy's float64 for float32), Python numbers and symbolic shapes that resolve pass."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import errors
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes


def _run(cfg: ExecutionConfig, make: Any, T: int = 3) -> list[Any]:
    ctx = TempoContext(cfg, num_dims=1, dim_names=("t",))
    ((t, T_),) = ctx.variables_and_bounds
    seen: list[Any] = []
    with ctx:
        make(t).sink_udf(lambda v: seen.append(v.clone()))
    ctx.compile({T_: T}).execute()
    return seen


@pytest.mark.parametrize("value, shape", [
    (lambda: np.ones(3), (3,)),  # float64 for float32: the backend narrows it
    (lambda: 2.5, ()),  # a Python float
    (lambda: 2, ()),  # a Python int where floats were declared
    (lambda: [1.0, 2.0], (2,)),  # a list
])
def test_accepted_results(cfg: ExecutionConfig, value: Any, shape: tuple) -> None:
    seen = _run(cfg, lambda t: RT.source_udf(value, shape, dtypes.float32, (t,)))
    want = torch.as_tensor(value(), dtype=torch.float32)
    assert len(seen) == 3 and all(torch.equal(v, want) for v in seen)


def test_symbolic_shape_resolves_per_point(cfg: ExecutionConfig) -> None:
    def make(t: Any) -> RT:
        x = RT.source_with_ts_udf(lambda ts: torch.ones(ts[t] + 1), (t + 1,), dtypes.float32,
                                  (t,))
        return x.sum()

    assert [float(v) for v in _run(cfg, make)] == [1.0, 2.0, 3.0]
    with pytest.raises(errors.ShapeError, match=r"shape \(3,\).*declared shape \(1,\)"):  # at t = 0
        _run(cfg, lambda t: RT.source_with_ts_udf(lambda ts: torch.ones(3), (t + 1,),
                                                   dtypes.float32, (t,)).sum(), T=2)


@pytest.mark.parametrize("value, declared, cls", [
    (lambda: torch.ones(3, dtype=torch.int32), dtypes.float32, errors.DTypeError),
    (lambda: torch.ones(3), dtypes.int64, errors.DTypeError),
    (lambda: torch.ones(3), dtypes.bool_, errors.DTypeError),
    (lambda: torch.ones(2, 3), dtypes.float32, errors.ShapeError),
])
def test_refused_results(cfg: ExecutionConfig, value: Any, declared: Any, cls: type) -> None:
    with pytest.raises(cls, match="source_udf"):
        _run(cfg, lambda t: RT.source_udf(value, (3,), declared, (t,)))


def test_every_backend_checks(cfg: ExecutionConfig) -> None:
    import dataclasses

    for backend in ("numpy", "jax"):
        c = dataclasses.replace(cfg, backend=backend)
        with pytest.raises(errors.ShapeError):
            _run(c, lambda t: RT.source_udf(lambda: np.ones(4, np.float32), (3,),
                                            dtypes.float32, (t,)))


@pytest.mark.parametrize("record, calls", [
    (lambda x: x.sink_with_ts_udf(lambda v: None), "2 arguments"),  # forgot ts
    (lambda x: x.sink_udf(lambda v, ts: None), "1 argument"),  # ts callback to sink_udf
    (lambda x: x.map_udf(lambda: 1.0).sink_udf(lambda v: None), "1 argument"),
])
def test_udf_of_the_wrong_arity_is_refused_at_compile_naming_the_line(
        record: Any, calls: str) -> None:
    """A callback that cannot take what its op passes failed inside the run, in generated
    code, as a bare TypeError; compile names the op, the line and what it is called with."""
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="numpy"), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        record(RT.ones((2,)) * t)
    with pytest.raises(errors.TempoError, match=calls) as info:
        ctx.compile({T: 3})
    assert isinstance(info.value, TypeError) and "test_udf_check.py:" in str(info.value)
