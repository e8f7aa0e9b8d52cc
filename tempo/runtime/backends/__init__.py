"""Backends register themselves with `tempo.core.dl_backend.DLBackend` on import; all
implement `tempo.runtime.backends.protocol.Backend`.

JAX takes ~2 s to import, so it is registered lazily by name: `DLBackend.get_backend`
imports `JaxBackend` on first use."""

from tempo.core.dl_backend import DLBackend
from tempo.runtime.backends import numpy as _numpy  # noqa: F401
from tempo.runtime.backends import torch as _torch  # noqa: F401
from tempo.runtime.backends.protocol import Backend, Kernel

if "jax" not in {n.value for n in DLBackend.registered()}:
    DLBackend.register("jax", "tempo.runtime.backends.jax:JaxBackend")

__all__ = ["Backend", "Kernel"]
