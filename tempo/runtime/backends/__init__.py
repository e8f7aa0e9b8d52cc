"""Backends register themselves with `tempo.core.dl_backend.DLBackend` on import."""

from tempo.runtime.backends import torch as _torch  # noqa: F401
