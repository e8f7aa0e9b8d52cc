"""`primitive(...)`: the one registration of a primitive's rules, into each layer's registry.

The op class (and its shape/dtype rule, `infer`) lives in `tempo.core.ops`, because the
core records and validates graphs with it; every other rule is given here, together:

- `grad`: the gradient rule (`tempo.api.autodiff.grad_rules`), or `NOT_DIFFERENTIABLE`;
- `batching`: the vectorisation rule (`tempo.compiler.op_rules`), or `NO_BATCHING`;
- `cost`: the FLOP/byte estimate (`tempo.compiler.op_rules`);
- `torch`, `jax`, `numpy`: one kernel factory per backend (`tempo.runtime.kernel_registry`),
  each importing its library lazily, in its body.
"""

from __future__ import annotations

from tempo.api.autodiff.grad_rules import GradMarker, Rule, has_grad_entry, register_grad
from tempo.compiler.op_rules import (
    BatchRule,
    CostRule,
    NoBatching,
    has_batching_entry,
    has_cost_rule,
    register_batching,
    register_cost,
)
from tempo.core.op_base import Op
from tempo.runtime.kernel_registry import BACKENDS, Factory, kernel_factory, register_kernel

DEFINED: list[type[Op]] = []
"""Every op class registered through `primitive`, in registration order."""


def primitive(op_cls: type[Op], *, grad: Rule | GradMarker, batching: BatchRule | NoBatching,
              cost: CostRule, torch: Factory, jax: Factory, numpy: Factory) -> None:
    """Register all of `op_cls`'s rules (each keyword is required: a forgotten rule is a
    TypeError at import, not a silent gap)."""
    if op_cls in DEFINED:
        raise ValueError(f"{op_cls.__name__} is defined twice")
    register_grad(op_cls, grad)
    register_batching(op_cls, batching)
    register_cost(op_cls, cost)
    kernels = {"torch": torch, "jax": jax, "numpy": numpy}
    for backend in BACKENDS:
        register_kernel(op_cls, backend, kernels[backend])
    DEFINED.append(op_cls)


def missing_rules(op_cls: type[Op]) -> list[str]:
    """The rules `op_cls` lacks in the layers' registries ([] when it is complete). Its
    shape rule is its `infer` (the base class's keeps input 0's shape and dtype)."""
    missing = [] if has_grad_entry(op_cls) else ["grad"]
    missing += [] if has_batching_entry(op_cls) else ["batching"]
    missing += [] if has_cost_rule(op_cls) else ["cost"]
    missing += [f"{be} kernel" for be in BACKENDS if kernel_factory(op_cls, be) is None]
    return missing
