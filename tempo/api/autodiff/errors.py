"""Errors of symbolic autodiff that the user can cause."""

from __future__ import annotations

from tempo.core.errors import TempoError


class GradientError(TempoError):
    """A gradient the user asked for would silently be missing: a tensor with
    `requires_grad=True` feeds the loss only through (or also through) the definition of a
    placeholder declared with `requires_grad=True`, a leaf whose definition autodiff does
    not differentiate (API §3.7); or `backward()` of a loss no grad-requiring tensor feeds
    (every `.grad` would stay None; torch raises "does not require grad" too)."""
