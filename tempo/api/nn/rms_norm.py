"""`RMSNorm` at the import path programs use (`tempo.api.nn.rms_norm`); defined in `norm`."""

from tempo.api.nn.norm import RMSNorm

__all__ = ["RMSNorm"]
