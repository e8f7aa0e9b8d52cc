"""The pass pipeline of ARCHITECTURE.md §5, in order: commit recurrences, the clean-up
group to a fixpoint, running sums over time (accumulate), vectorisation, statify (tiled
dynamic reads), incrementalisation, dataflow grouping (fused regions), storage choice.
Each optimisation is switched by its ExecutionConfig flag; passes never execute the
program (only constants are evaluated, in numpy)."""

from __future__ import annotations

from collections.abc import Mapping

from tempo.compiler.pass_manager import Pass, PassManager, StageReport
from tempo.compiler.passes import (
    accumulate,
    algebraic,
    broadcast_elim,
    commit_recurrences,
    constant_folding,
    dead_code,
    dedup,
    domain_reduction,
    grouping,
    incrementalize,
    statify,
    storage,
    vectorize,
)
from tempo.core.configs import ExecutionConfig
from tempo.core.index_expr import Symbol
from tempo.core.sdg import SDG

COMMIT = Pass("commit_recurrences", commit_recurrences.run)
CLEANUP: tuple[Pass, ...] = (  # dead-code elimination last: it sweeps what the others left
    Pass("dedup", dedup.run, "enable_duplicate_code_elim"),
    Pass("constant_folding", constant_folding.run, "enable_constant_folding"),
    Pass("algebraic", algebraic.run, "enable_algebraic_optimizer"),
    Pass("broadcast_elim", broadcast_elim.run, "enable_broadcast_elim"),
    Pass("domain_reduction", domain_reduction.run, "enable_domain_reduction"),
    Pass("dead_code", dead_code.run, "enable_dead_code_elim"),
)
ACCUMULATE = Pass("accumulate", accumulate.run, "enable_incrementalization")  # sums in time
VECTORIZE = Pass("vectorize", vectorize.run, "enable_vectorization")
STATIFY = Pass("statify", statify.run, "enable_statifying_incrementalization")
INCREMENTALIZE = Pass("incrementalize", incrementalize.run, "enable_incrementalization")
GROUPING = Pass("grouping", grouping.run, "enable_dataflow_grouping",  # fused regions
                also=("enable_fusion",))
STORAGE = Pass("storage", storage.run)  # block stores only where the config allows them


def run_pipeline(sdg: SDG, cfg: ExecutionConfig, bounds: Mapping[Symbol, int] | None = None,
                 profile: dict[str, float] | None = None,
                 report: StageReport | None = None) -> SDG:
    """A copy of `sdg` rewritten for execution with the bound values `bounds` (constant
    folding and branch pruning use them); per-pass milliseconds go to `profile`."""
    pm = PassManager(cfg, profile, report)
    sdg = sdg.copy()
    sdg.bound_defs.update(bounds or {})
    pm.check(sdg, "recording (the graph the api built)", everything=True)
    sdg = pm.run(COMMIT, sdg)
    sdg = pm.fixpoint("clean-up", CLEANUP, sdg)
    sdg = pm.run(ACCUMULATE, sdg)
    sdg = pm.run(VECTORIZE, sdg)
    sdg = pm.run(STATIFY, sdg)
    sdg = pm.run(INCREMENTALIZE, sdg)
    sdg = pm.run(GROUPING, sdg)
    return pm.run(STORAGE, sdg)
