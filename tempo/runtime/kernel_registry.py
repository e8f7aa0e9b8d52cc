"""The runtime's rule of each primitive: one kernel factory per (op class, backend name).

The factories are registered by the primitive modules (`tempo.prims`), next to the op's
other rules; a backend's `kernel(op)` looks its own up here. A factory takes the op and the
backend instance once, at compile time, and returns the callable the generated code invokes
per point, so op parameters are bound ahead of time. Registering a factory imports no
backend library: a factory imports torch/jax lazily, in its body, which runs only once the
backend exists (a jax-only user never imports torch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tempo.core import naming
from tempo.core.errors import BackendError
from tempo.core.op_base import Op

Kernel = Callable[..., Any]
"""What the generated code calls per op per point: inputs (then symbolic dims) → outputs."""

Factory = Callable[[Any, Any], Kernel]
"""(op, backend instance) → the op's kernel with its parameters bound."""

BACKENDS: tuple[str, ...] = ("torch", "jax", "numpy")
"""Every backend a primitive must give a kernel for (checked by the prims test)."""

_FACTORIES: dict[str, dict[type[Op], Factory]] = {name: {} for name in BACKENDS}


def register_kernel(op_cls: type[Op], backend: str, factory: Factory) -> None:
    """Make `factory` the kernel of `op_cls` on `backend` (once: a second one is a bug)."""
    table = _FACTORIES.setdefault(backend, {})
    if op_cls in table:
        raise ValueError(f"{op_cls.__name__} already has a {backend} kernel")
    table[op_cls] = factory


def kernel_factory(op_cls: type[Op], backend: str) -> Factory | None:
    return _FACTORIES.get(backend, {}).get(op_cls)


def registered_kernels(backend: str) -> dict[type[Op], Factory]:
    """A copy of `backend`'s table (tests, docs)."""
    return dict(_FACTORIES.get(backend, {}))


def make_kernel(op: Op, be: Any) -> Kernel:
    """`op`'s kernel on backend instance `be` (named by `be.name`), or a BackendError."""
    factory = _FACTORIES.get(be.name, {}).get(type(op))
    if factory is None:
        raise BackendError(f"the {be.name} backend has no kernel for "
                           f"{naming.op_label(op)} (are the primitives loaded? "
                           f"`import tempo.prims` registers them)", site=op.site)
    # Failures are named by the executor (generated line -> op): no per-call wrapper.
    return factory(op, be)
