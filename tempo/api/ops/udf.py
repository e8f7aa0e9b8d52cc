"""User functions: sinks (graph outputs) and 1-in/1-out maps, called with backend tensors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import active_ctx, lift, record, record1
from tempo.core import ops
from tempo.core.dtype import DataTypeLike, dtypes
from tempo.core.shape import Shape, ShapeLike

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def sink_udf(x: Any, fun: Callable[[Any], None]) -> None:
    """Call `fun(tensor)` once per point of x's domain, in schedule order."""
    record(ops.SinkUDFOp, [x], fn=fun, with_ts=False)


def sink_with_ts_udf(x: Any, fun: Callable[[Any, dict], None]) -> None:
    record(ops.SinkUDFOp, [x], fn=fun, with_ts=True)


def sink_many_udf(xs: Sequence[Any], fun: Callable[[tuple], None]) -> None:
    record(ops.SinkUDFOp, list(xs), fn=lambda *ts: fun(ts), with_ts=False)


def sink_many_with_ts_udf(xs: Sequence[Any], fun: Callable[[tuple, dict], None]) -> None:
    record(ops.SinkUDFOp, list(xs), fn=lambda *a: fun(a[:-1], a[-1]), with_ts=True)


def map_udf(x: Any, fun: Callable[..., Any], shape: ShapeLike | None = None,
            dtype: DataTypeLike | None = None, with_ts: bool = False) -> RecurrentTensor:
    """A user function from one tensor to one; shape and dtype default to the input's."""
    x = lift(x)
    shp = x.shape if shape is None else Shape.from_(shape)
    dt = x.dtype if dtype is None else dtypes.from_(dtype)
    return record1(ops.MapUDFOp, [x], fn=fun, shape=shp, dtype=dt, with_ts=with_ts)


def barrier(name: str | None = None) -> None:
    """A named marker between the user functions (sinks, UDF sources, map UDFs) recorded
    before it and those recorded after it (API §3.6): the scheduler runs every point of
    the ones before, then the barrier, then the ones after (`tempo.schedule.barrier_order`),
    so `execute_until_barrier(name)` stops with exactly the sinks before it fired. It
    reads nothing: the order is the scheduler's, not a data dependence (reading the
    earlier sinks' inputs at their last points, as it did, kept neither those sinks before
    it nor later ones after it)."""
    ctx = active_ctx()
    record(ops.BarrierOp, [], label=name or f"barrier{len(ctx.sdg.ops)}")
    ctx.last_barrier = next(reversed(ctx.sdg.ops))  # the barrier: the op added last


class UDFOps:
    """UDF methods mixed into RecurrentTensor."""

    sink_many_udf = staticmethod(sink_many_udf)
    sink_many_with_ts_udf = staticmethod(sink_many_with_ts_udf)
    barrier = staticmethod(barrier)

    def sink_udf(self, fun: Callable[[Any], None]) -> None:
        sink_udf(self, fun)

    def sink_with_ts_udf(self, fun: Callable[[Any, dict], None]) -> None:
        sink_with_ts_udf(self, fun)

    def map_udf(self, fun: Callable[[Any], Any], shape: ShapeLike | None = None,
                dtype: DataTypeLike | None = None) -> RecurrentTensor:
        return map_udf(self, fun, shape, dtype)

    def map_with_ts_udf(self, fun: Callable[[Any, dict], Any], shape: ShapeLike | None = None,
                        dtype: DataTypeLike | None = None) -> RecurrentTensor:
        return map_udf(self, fun, shape, dtype, with_ts=True)
