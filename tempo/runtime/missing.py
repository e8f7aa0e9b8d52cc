"""Why a tensor the user reads from an executor is not there, and how to keep it: removed
by dead-code elimination (nothing the program outputs needs it), folded into another op,
freed by garbage collection after its last use, or not computed yet."""

from __future__ import annotations

from typing import Any

from tempo.core import naming, ops
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import TempoError, user_site
from tempo.core.sdg import SDG, TensorId


class TensorNotAvailableError(TempoError, KeyError):
    """A read of a tensor (or a point of it) that the executor does not hold (TempoError's
    `__str__` comes first in the MRO, so the message is not quoted as KeyError's would be)."""


def removed_error(recorded: SDG | None, cfg: ExecutionConfig, tid: TensorId
                  ) -> TensorNotAvailableError:
    """The error for a tensor id the compiled program has no store for."""
    if recorded is None or tid.op_id not in recorded.ops:
        return TensorNotAvailableError(f"no tensor with id {tid} belongs to this program: pass "
                                       "the `tensor_id` of a RecurrentTensor of the same context")
    op = recorded.ops[tid.op_id]
    name = naming.tensor_label(recorded, tid)
    if isinstance(op, ops.SinkUDFOp | ops.BarrierOp):
        return TensorNotAvailableError(f"{name} has no value to read", site=op.site)
    if cfg.enable_dead_code_elim and not _reaches_output(recorded, tid.op_id):
        why = ("was removed by dead-code elimination: no sink of the program depends on it. "
               "To read it, give it a sink (e.g. `x.sink_udf(lambda v: None)`) or compile with "
               "ExecutionConfig(enable_dead_code_elim=False)")
    else:
        why = ("was folded into another op by the compiler's optimisations (or fused into a "
               "region, which never stores it). To read it, compile with "
               "ExecutionConfig.test_cfg() (every optimisation off), or turn off "
               "enable_duplicate_code_elim, enable_algebraic_optimizer and "
               "enable_fusion")
    return TensorNotAvailableError(f"{name} {why}", site=op.site)


def no_value_error(sdg: SDG, cfg: ExecutionConfig, tid: TensorId, point: tuple,
                   executed: bool) -> TensorNotAvailableError:
    """The error for a point of a stored tensor that holds no value."""
    op = sdg.ops[tid.op_id]
    at = naming.point_word({v.name: p for v, p in zip(op.domain.variables, point)})
    name = naming.tensor_label(sdg, tid)
    where = f" at {at}" if at else ""
    if not executed:
        why = "it has not been computed yet: call execute() first"
    elif cfg.enable_gc:
        why = ("garbage collection freed it after its last use. To keep every point, compile "
               "with ExecutionConfig(enable_gc=False)")
    else:
        why = "the program never computes that point (no reader or sink needs it)"
    return TensorNotAvailableError(f"{name} has no value{where}: {why}", site=op.site)


def bad_index_error(sdg: SDG, tid: TensorId, index: Any) -> TensorNotAvailableError:
    """The error for an index that does not address the tensor's domain, at the user's
    read (the mistake is the index, not the tensor's definition)."""
    op = sdg.ops[tid.op_id]
    dims = naming.domain_word(op.domain)
    return TensorNotAvailableError(
        f"index {index} does not fit {naming.tensor_label(sdg, tid)}: it needs one entry per "
        f"dimension of its domain {dims} (ints, or slices to stack points)", site=user_site())


def out_of_range_error(sdg: SDG, tid: TensorId, var: str, point: int, extent: int,
                       site: str) -> TensorNotAvailableError:
    """The error for a point index past the end of its dimension (or before its start);
    `site` is the user's line that asked for it."""
    return TensorNotAvailableError(
        f"{var} = {point} is out of range for {naming.tensor_label(sdg, tid)}: {var} has "
        f"{extent} points here (0 to {extent - 1}; negative ints count from the end)",
        site=site)


def _reaches_output(sdg: SDG, op_id: int) -> bool:
    """Whether a sink or barrier reads this op, directly or through other ops."""
    seen, work = {op_id}, [op_id]
    while work:
        for e in sdg.out_edges.get(work.pop(), []):
            sink = sdg.ops.get(e.sink)
            if isinstance(sink, ops.SinkUDFOp | ops.BarrierOp):
                return True
            if e.sink not in seen:
                seen.add(e.sink)
                work.append(e.sink)
    return False
