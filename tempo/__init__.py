"""Tempo: recurrent-tensor programs compiled through a polyhedral schedule."""

from tempo.core.errors import TempoError

__all__ = ["TempoError"]
