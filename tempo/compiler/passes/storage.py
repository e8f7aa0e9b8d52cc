"""Storage choice: a tensor read through slices of one domain dimension (a growing history
`k[0:t+1]`, a window, a whole `x[0:T]`) gets a block store along that dimension, so slice
reads are views instead of stacking points. Everything else keeps the point store. Block
stores need in-place writes and lazy (view) slices, so either config switch turns them off."""

from __future__ import annotations

from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.index_expr import Slice
from tempo.core.sdg import SDG, TensorId


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    sdg.block_stores = {}
    if not (cfg.enable_hybrid_tensorstore and cfg.can_inplace_write() and cfg.can_lazy_slice()):
        return sdg
    for tid, info in sdg.tensors.items():
        if not info.shape.is_static() or isinstance(sdg.ops[tid.op_id], ops.SinkUDFOp):
            continue
        dim = _blocked_dim(sdg, tid)
        if dim is not None:
            sdg.block_stores[tid] = dim
    return sdg


def _blocked_dim(sdg: SDG, tid: TensorId) -> int | None:
    """The one domain position every slice read of `tid` slices, if there is one."""
    dims = set()
    for e in sdg.readers(tid):
        positions = [k for k, m in enumerate(e.expr) if isinstance(m, Slice)]
        if len(positions) > 1:
            return None
        dims.update(positions)
    return dims.pop() if len(dims) == 1 else None
