"""`clip_norm`: global-norm gradient clipping (torch.nn.utils.clip_grad_norm_ semantics).

Optimizers use it for `max_norm`; it is also public for hand-written update rules."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.core.errors import TempoError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def total_norm(xs: Sequence[Any], norm_type: float = 2.0) -> RecurrentTensor:
    """The `norm_type`-norm of all elements of all tensors together."""
    from tempo.api.recurrent_tensor import RecurrentTensor

    ts = [RecurrentTensor.lift(x) for x in xs]
    if math.isinf(norm_type):
        m = ts[0].abs().max()
        for t in ts[1:]:
            m = m.maximum(t.abs().max())
        return m
    acc: Any = None
    for t in ts:
        a = t.abs()
        s = (a * a).sum() if norm_type == 2.0 else (a**norm_type).sum()
        acc = s if acc is None else acc + s
    return acc.sqrt() if norm_type == 2.0 else acc ** (1.0 / norm_type)


def clip_norm(
    grads: Sequence[Any], max_norm: float, norm_type: float = 2.0, eps: float = 1e-6
) -> tuple[list[RecurrentTensor], RecurrentTensor]:
    """Scale all `grads` by min(1, max_norm / (total_norm + eps)); returns (clipped, norm)."""
    if not grads:
        raise TempoError("clip_norm needs at least one gradient (got an empty list: were "
                         "the .grad of the parameters collected after backward()?)",
                         site=user_site())
    norm = total_norm(grads, norm_type)
    coef = (max_norm / (norm + eps)).minimum(1.0)
    return [g * coef for g in grads], norm
