"""User-facing API: `RecurrentTensor`, `TempoContext` and index-expression `min`/`max`.

Names load lazily so that light sub-packages (e.g. `tempo.api.rl.env`) import without the
whole front end."""

from __future__ import annotations

from typing import Any

__all__ = ["RecurrentTensor", "TempoContext", "min", "max"]


def __getattr__(name: str) -> Any:
    if name == "RecurrentTensor":
        from tempo.api.recurrent_tensor import RecurrentTensor

        return RecurrentTensor
    if name == "TempoContext":
        from tempo.api.tempo_context_manager import TempoContext

        return TempoContext
    if name in ("min", "max"):
        from tempo.core import index_expr

        return getattr(index_expr, name)
    raise AttributeError(name)
