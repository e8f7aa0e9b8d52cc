"""`Flatten` as a module, so it can sit inside `Sequential` like torch.nn.Flatten."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tempo.api.nn.module import Module

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


class Flatten(Module):
    """Merge dims `start_dim..end_dim` (default: everything, as the API's `flatten`)."""

    def __init__(self, start_dim: int = 0, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Any) -> RecurrentTensor:
        from tempo.api.recurrent_tensor import RecurrentTensor

        return RecurrentTensor.lift(x).flatten(self.start_dim, self.end_dim)
