"""Tempo: recurrent-tensor programs compiled through a polyhedral schedule."""

from tempo.core.errors import TempoError

__all__ = ["TempoError", "convert"]


def __getattr__(name: str) -> object:
    """`tempo.convert` (MEMSAVE.md 5) is tempo.memsave.convert, imported on first use so
    that `import tempo` does not load torch."""
    if name == "convert":
        from tempo.memsave import convert

        return convert
    raise AttributeError(f"module 'tempo' has no attribute {name!r}")
