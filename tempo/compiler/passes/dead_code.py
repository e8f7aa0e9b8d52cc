"""Dead-code elimination: keep what reaches a sink, a barrier or a tensor the user keeps."""

from __future__ import annotations

from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.sdg import SDG


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    live = live_ops(sdg)
    dead = [i for i in sdg.ops if i not in live]
    if dead:
        sdg.remove_ops(dead)
    return sdg


def live_ops(sdg: SDG) -> set[int]:
    """The ops whose values reach a sink, a barrier or a kept tensor."""
    live: set[int] = {tid.op_id for tid in sdg.keep}
    live |= {op.op_id for op in sdg.ops.values() if isinstance(op, ops.SinkUDFOp | ops.BarrierOp)}
    work = list(live)
    while work:
        op_id = work.pop()
        for e in sdg.in_edges[op_id]:
            if e.src.op_id not in live:
                live.add(e.src.op_id)
                work.append(e.src.op_id)
    return live
