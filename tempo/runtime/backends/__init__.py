"""Backends register themselves with `tempo.core.dl_backend.DLBackend` on import.

JAX takes ~2 s to import, so it is registered as a stand-in that imports the real
`JaxBackend` on first instantiation (which then replaces the stand-in in the registry).
"""

from typing import Any

from tempo.core.dl_backend import DLBackend
from tempo.runtime.backends import numpy as _numpy  # noqa: F401
from tempo.runtime.backends import torch as _torch  # noqa: F401


class LazyJaxBackend:
    """Stands in for `tempo.runtime.backends.jax.JaxBackend` until it is first used."""

    name = "jax"

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from tempo.runtime.backends.jax import JaxBackend

        return JaxBackend(*args, **kwargs)

    @classmethod
    def from_config(cls, cfg: Any) -> Any:
        from tempo.runtime.backends.jax import JaxBackend

        return JaxBackend.from_config(cfg)


DLBackend.register("jax", LazyJaxBackend)
