"""Names of the deep-learning backends and the registry the runtime fills with them.
Core never imports the runtime statically; `get_backend` loads it on first use."""

from __future__ import annotations

import importlib
from enum import Enum
from typing import TYPE_CHECKING, Any

from tempo.core.errors import ConfigError, user_site

if TYPE_CHECKING:
    from tempo.runtime.backends.protocol import Backend

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


class DLBackend:
    """Registry of backend classes by name; `runtime.backends` registers them on import.

    A backend may be registered lazily as "module:Class" (jax takes ~2 s to import): the
    class is imported on the first `get_backend` and replaces the string in the registry."""

    _registry: dict[DLBackendName, Any] = {}
    _RUNTIME_MODULE = "tempo.runtime.backends"

    @staticmethod
    def register(name: str | DLBackendName, cls: Any) -> Any:
        """Record `cls` (a class, or a lazy "module:Class" reference) as the backend for
        `name`; returns `cls` so it works as a helper."""
        DLBackend._registry[DLBackendName.from_(name)] = cls
        return cls

    @staticmethod
    def get_backend(name: str | DLBackendName) -> type[Backend]:
        """The backend class for `name`, importing the runtime's backends on first use.
        Its conversions are static: `DLBackend.get_backend("torch").from_dlpack(x)`."""
        key = DLBackendName.from_(name)
        if key not in DLBackend._registry:
            importlib.import_module(DLBackend._RUNTIME_MODULE)
        cls = DLBackend._registry.get(key)
        if isinstance(cls, str):
            module, _, attr = cls.partition(":")
            cls = getattr(importlib.import_module(module), attr)
            DLBackend._registry[key] = cls
        if cls is None:
            raise ConfigError(f"backend {key.value!r} is not available", site=user_site())
        return cls  # type: ignore[no-any-return]  # registry values are backend classes

    @staticmethod
    def registered() -> tuple[DLBackendName, ...]:
        return tuple(DLBackend._registry)
