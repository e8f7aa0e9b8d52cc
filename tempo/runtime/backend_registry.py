"""The registry of deep-learning backends: backend classes by `DLBackendName`. The
backends register themselves when `tempo.runtime.backends` is imported; `get_backend`
imports that package on first use. (`tempo.core.dl_backend.DLBackend` is this class,
re-exported under the user-facing import path of API.md §0.)"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tempo.core.dl_backend import DLBackendName
from tempo.core.errors import ConfigError, TempoError, user_site

if TYPE_CHECKING:
    from tempo.runtime.backends.protocol import Backend


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
        return cls  # registry values are backend classes

    @staticmethod
    def registered() -> tuple[DLBackendName, ...]:
        return tuple(DLBackend._registry)


def backend_for(cfg: Any, site: str) -> Backend:
    """The backend `cfg` asks for, on its device. A device or backend it cannot have
    (gpu:3 on a machine with one GPU, numpy on a GPU) is an error of the user's compile
    call at `site`, whatever the stack inside the backend looks like."""
    try:
        return DLBackend.get_backend(cfg.backend).from_config(cfg)
    except TempoError as exc:
        raise exc.at(site) from None
