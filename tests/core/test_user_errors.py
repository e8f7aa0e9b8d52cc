"""Errors a user can cause raise a TempoError subclass naming the tensor/expression and
the user's source line (this file), never a bare assert or an isl crash."""

from __future__ import annotations

import dataclasses

import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import errors
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

HERE = "test_user_errors.py"


def _ctx(cfg, n: int = 1):  # noqa: ANN001, ANN202
    ctx = TempoContext(cfg, num_dims=n)
    return ctx, ctx.variables_and_bounds


def test_same_point_cycle_is_a_schedule_error_naming_the_ops(cfg) -> None:
    ctx, ((t, T),) = _ctx(cfg)
    with ctx:
        a = RT.placeholder((), dtypes.float32, domain=(t,))
        b = a * 2.0
        a[True] = b + 1.0
        b.sink_udf(lambda x: None)
    with pytest.raises(errors.ScheduleError) as info:
        ctx.compile({T: 3})
    msg = str(info.value)
    assert "placeholder" in msg and "mul" in msg and HERE in msg


def test_missing_bound_at_compile(cfg) -> None:
    ctx, ((t, T), (b, B)) = _ctx(cfg, 2)
    with ctx:
        RT.from_symbol(t).sink_udf(lambda x: None)
    with pytest.raises(errors.BoundError, match="D1"):
        ctx.compile({T: 3})


def test_definition_shape_mismatch(cfg) -> None:
    ctx, ((t, T),) = _ctx(cfg)
    with ctx:
        x = RT.placeholder((3,), dtypes.float32, domain=(t,))
        with pytest.raises(errors.ShapeError) as info:
            x[True] = RT.zeros((4,))
    assert "(3)" in str(info.value).replace(",", "") or "3" in str(info.value)
    assert HERE in str(info.value)


def test_definition_dtype_mismatch(cfg) -> None:
    ctx, ((t, T),) = _ctx(cfg)
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        with pytest.raises(errors.DTypeError) as info:
            x[True] = RT.from_symbol(t)
    assert "float" in str(info.value) and HERE in str(info.value)


def test_unknown_symbol_in_index(cfg) -> None:
    ctx, ((t, T),) = _ctx(cfg)
    z = ie.symbols("z")
    with ctx:
        x = RT.from_symbol(t)
        with pytest.raises(errors.IndexExprError) as info:
            x[z]
    assert "z" in str(info.value) and HERE in str(info.value)


def test_constant_index_outside_bound(cfg) -> None:
    ctx, ((t, T),) = _ctx(cfg)
    with ctx:
        x = RT.from_symbol(t)
        y = x[7] + 1
        y.sink_udf(lambda v: None)
    with pytest.raises(errors.IndexExprError) as info:
        ctx.compile({T: 5})
    assert "7" in str(info.value) and HERE in str(info.value)


def test_unguarded_past_read_needed_by_a_sink(cfg) -> None:
    ctx, ((t, T),) = _ctx(cfg)
    with ctx:
        x = RT.from_symbol(t)
        (x + x[t - 1]).sink_udf(lambda v: None)
    with pytest.raises(errors.IndexExprError, match="(?i)guard") as info:
        ctx.compile({T: 5})
    assert HERE in str(info.value)


def test_spatial_broadcast_mismatch(cfg) -> None:
    ctx, _ = _ctx(cfg, 0)
    with ctx:
        with pytest.raises(errors.ShapeError) as info:
            RT.zeros((3,)) + RT.zeros((4,))
    assert HERE in str(info.value)


def test_matmul_mismatch(cfg) -> None:
    ctx, _ = _ctx(cfg, 0)
    with ctx:
        with pytest.raises(errors.ShapeError, match="matmul"):
            RT.zeros((2, 3)) @ RT.zeros((4, 5))


def test_bad_config_is_a_config_error() -> None:
    with pytest.raises(errors.ConfigError):
        ExecutionConfig(backend="tensorflow")
    with pytest.raises(errors.ConfigError):
        dataclasses.replace(ExecutionConfig.test_cfg(), inc_statify_block_size=0)


def test_assigning_a_non_placeholder(cfg) -> None:
    ctx, ((t, T),) = _ctx(cfg)
    with ctx:
        x = RT.from_symbol(t)
        with pytest.raises(errors.TempoError, match="placeholder"):
            x[True] = RT.from_symbol(t)


def test_undefined_recurrence_point_at_runtime(cfg) -> None:
    from tempo.runtime.codegen import UndefinedPointError

    ctx, ((t, T),) = _ctx(cfg)
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        x[t < 2] = RT.const(1.0)
        x.sink_udf(lambda v: None)
    exe = ctx.compile({T: 4})
    with pytest.raises(UndefinedPointError, match="none of its branches"):
        exe.execute()
