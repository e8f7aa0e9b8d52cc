"""Symbolic reverse-mode autodiff over the SDG (ARCHITECTURE §4, API §3.7)."""

from __future__ import annotations

from typing import Any

from tempo.api.autodiff.backward import BACKWARD_REGION, backward
from tempo.api.autodiff.errors import GradientError
from tempo.api.tensor_base import lift


class AutodiffOps:
    """`backward()` mixed into RecurrentTensor."""

    def backward(self, grad: Any = None) -> None:
        """Reverse-mode gradients of this tensor into the `.grad` of every leaf it uses."""
        backward(lift(self), grad)


__all__ = ["AutodiffOps", "BACKWARD_REGION", "GradientError", "backward"]
