"""Algebraic simplification: a table of (pattern, rewrite) rules applied over the graph.

Each rule (see `algebraic_rules.RULES`) names the op kinds it looks at and a function that
rewrites one such op with the SDG helpers and says whether it did. Rules are exact: they
never change a result, bit for bit (no float reassociation, no `x*0 -> 0`). The pass
manager repeats the clean-up group, this pass included, until nothing changes.
`ExecutionConfig.algebraic_optims_to_disable` switches rules off by name."""

from __future__ import annotations

from tempo.compiler.passes.algebraic_rules import RULES, Rule
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import ConfigError
from tempo.core.sdg import SDG


def active_rules(cfg: ExecutionConfig) -> dict[type[ops.Op], list[Rule]]:
    """The enabled rules by op kind; unknown names in the disable list are a ConfigError."""
    off = set(cfg.algebraic_optims_to_disable)
    unknown = off - {r.name for r in RULES}
    if unknown:
        known = ", ".join(r.name for r in RULES)
        raise ConfigError(f"algebraic_optims_to_disable names unknown rules {sorted(unknown)} "
                          f"(known: {known})")
    table: dict[type[ops.Op], list[Rule]] = {}
    for rule in RULES:
        if rule.name not in off:
            for kind in rule.kinds:
                table.setdefault(kind, []).append(rule)
    return table


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    table = active_rules(cfg)
    for op in list(sdg.topological()):
        for rule in table.get(type(op), ()):
            current = sdg.ops.get(op.op_id)
            if current is None or not isinstance(current, rule.kinds):
                break  # removed or turned into another kind of op by an earlier rule
            rule.rewrite(sdg, current)
    return sdg
