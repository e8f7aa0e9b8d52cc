"""Backward passes that are first-order only must say so when asked for more."""

from __future__ import annotations

import torch


def first_order_only(layer: str, stock: str) -> None:
    """Refuse a backward run with create_graph=True (grad mode is on inside backward only
    then). The backward rebuilds what it needs from saved values that carry no graph back
    to the input (rstd, the softmax probabilities), so a second derivative through it
    would silently leave those paths out (a gradient penalty off by O(1))."""
    if torch.is_grad_enabled():
        raise RuntimeError(
            f"{layer} has a first-order backward only: double backward (create_graph=True, "
            f"e.g. a gradient penalty or a Hessian-vector product) is not supported through "
            f"it; use {stock} for that part of the model")
