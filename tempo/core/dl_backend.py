"""Names of the deep-learning backends (`DLBackendName`, which configs use).

The registry of backend classes lives in the runtime (`tempo.runtime.backend_registry`):
core loads no backend. `DLBackend` stays importable from here because API.md §0 lists
this path; it is resolved on first access (a re-export, not a dependency of core)."""

from __future__ import annotations

from enum import Enum
from typing import Any

from tempo.core.errors import ConfigError, user_site

_ALIASES = {"torch": "TORCH", "pytorch": "TORCH", "jax": "JAX", "xla": "JAX",
            "numpy": "NUMPY", "np": "NUMPY"}


class DLBackendName(Enum):
    """A backend family; parse user strings with `DLBackendName.from_(s)`."""

    TORCH = "torch"
    JAX = "jax"
    NUMPY = "numpy"

    @staticmethod
    def from_(name: str | DLBackendName) -> DLBackendName:
        """Case-insensitive: "torch"/"pytorch", "jax"/"xla", "numpy"/"np"."""
        if isinstance(name, DLBackendName):
            return name
        member = _ALIASES.get(str(name).strip().lower())
        if member is None:
            known = ", ".join(sorted(_ALIASES))
            raise ConfigError(f"unknown backend {name!r} (known: {known})", site=user_site())
        return DLBackendName[member]

    @classmethod
    def _missing_(cls, value: object) -> DLBackendName | None:
        member = _ALIASES.get(str(value).strip().lower())
        return cls[member] if member is not None else None

    def __str__(self) -> str:
        return self.value


def __getattr__(name: str) -> Any:
    """`DLBackend`: the runtime's registry, under its user-facing import path."""
    if name == "DLBackend":
        from tempo.runtime.backend_registry import DLBackend

        return DLBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
