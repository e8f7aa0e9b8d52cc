"""User functions: sinks (graph outputs) and 1-in/1-out maps, called with backend tensors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import active_ctx, lift, record, record1
from tempo.core import index_expr as ie
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
    """A named marker after every op recorded so far (API §3.6).

    The marker reads, at the last point of their domains, the tensors every earlier sink
    reads: without such an edge nothing orders it after them, and the schedule placed it
    before the loops (`execute_until_barrier` then stopped before any sink had fired).
    The last point of a loop nest is produced after all its other points, and reading one
    point keeps no more than one point alive."""
    from tempo.api.tensor_base import RTBase

    ctx = active_ctx()
    sdg = ctx.sdg
    reads: dict[Any, Any] = {}
    for op in list(sdg.ops.values()):
        if not isinstance(op, ops.SinkUDFOp | ops.BarrierOp):
            continue
        for e in sdg.in_edges[op.op_id]:
            src_dom = sdg.ops[e.src.op_id].domain
            last = ie.IndexSequence(tuple(ie.lift_to_int_ie(b) - 1 for b in src_dom.ubounds))
            reads.setdefault(e.src, RTBase._final_cls(e.src, last, False, ctx))
    record(ops.BarrierOp, list(reads.values()), label=name or f"barrier{len(sdg.ops)}")


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
