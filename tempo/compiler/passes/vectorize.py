"""Vectorisation (ARCHITECTURE §5.3): a dimension that no dependence cycle carries becomes
a leading spatial batch dim for a group of ops — one op over `0:D` instead of `D` ops.

Dimensions are tried innermost first (`t`, then `b`, then `i` in an RL program), so that
a tensor batched over several dims has them in domain order (`(B, T, ...)`), the order in
which a read `x[0:B, 0:T]` stacks them. Which ops are batched is decided by
`vectorize_plan` (groups, cycles, the config's thresholds), how each op batches by
`vectorize_rules`, and the exact rewrite of every read by `vectorize_rewrite`.
Batched products summed over a dim then become matmuls (`vectorize_contract`).
`enable_non_trivial_vectorization` adds recurrences whose branches select along the
dimension (boundaries such as `x[T-1] = ...; x[True] = y[t+1]`), built from pieces.
"""

from __future__ import annotations

from tempo.compiler.passes.vectorize_contract import contract
from tempo.compiler.passes.vectorize_plan import plan
from tempo.compiler.passes.vectorize_rewrite import vectorize
from tempo.core.configs import ExecutionConfig
from tempo.core.sdg import SDG


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    batched: set[int] = set()
    for d in reversed(sdg.universe.variables):
        if d in sdg.loop_dims:
            continue  # its extent is decided at run time (a boolean bound)
        size = sdg.bound_defs.get(d.as_bound())
        if isinstance(size, int) and not isinstance(size, bool) and size > 1:
            batched |= vectorize(sdg, plan(sdg, d, size, cfg), cfg.enable_dead_code_elim)
    contract(sdg, batched)
    return sdg
