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
from tempo.compiler.passes.vectorize_plan import is_dim, plan
from tempo.compiler.passes.vectorize_reach import reads_past_end
from tempo.compiler.passes.vectorize_rewrite import vectorize
from tempo.core.configs import ExecutionConfig
from tempo.core.index_expr import Symbol
from tempo.core.sdg import SDG


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    batched: set[int] = set()
    dims = sdg.universe.variables
    skip = _iteration_dim(sdg, dims)
    for d in reversed(dims):
        if d in sdg.loop_dims:
            continue  # its extent is decided at run time (a boolean bound)
        if d == skip:
            continue  # the iteration dim: see _iteration_dim
        size = sdg.bound_defs.get(d.as_bound())
        if isinstance(size, int) and not isinstance(size, bool) and size > 1:
            if reads_past_end(sdg, d, size):
                continue  # the loop form is an error the scheduler names (vectorize_reach)
            batched |= vectorize(sdg, plan(sdg, d, size, cfg), cfg.enable_dead_code_elim)
    contract(sdg, batched)
    return sdg


def _iteration_dim(sdg: SDG, dims: tuple[Symbol, ...]) -> Symbol | None:
    """The program's iteration dim, which stays a loop (issue 10: "never the iteration
    dim"): batching what does not feed its recurrence — the loss a sink logs, per-iteration
    metrics — over it would keep every iteration's inputs alive until the last one and run
    per-iteration sinks after the loop. It is the first dim if that one iterates, else the
    outermost iterating dim when an inner one iterates too: in `(b, i, t)` that is `i`
    (parameters over `i`, the episode over `t`), while the lone recurrent `t` of a `(b, t)`
    program stays batchable for what reads it whole."""
    if len(dims) < 2:
        return None
    iterating = [d for d in dims if _iterates(sdg, d)]
    if dims[0] in iterating:
        return dims[0]
    return iterating[0] if len(iterating) >= 2 else None


def _iterates(sdg: SDG, d: Symbol) -> bool:
    """Whether some op reads another point of `d` from an op over `d` (a recurrence, e.g.
    parameters updated over `i`)."""
    for i, op in sdg.ops.items():
        if d not in op.domain:
            continue
        for e in sdg.in_edges[i]:
            src = sdg.ops[e.src.op_id]
            if d in src.domain:
                member = e.expr[src.domain.find_variable_index(d)]
                if not is_dim(member, d):
                    return True
    return False
