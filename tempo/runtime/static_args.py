"""Bounds bound into ops before their kernels are made: the rule lives in the core
(`tempo.core.op_bounds`), because the compiler binds the members of fused regions too."""

from tempo.core.op_bounds import bind_bounds

__all__ = ["bind_bounds"]
