"""Typed aliases of RL tensors (API.md §6.4): NewTypes over RecurrentTensor, for signatures
that say what a tensor holds (they cost nothing at runtime)."""

from __future__ import annotations

from typing import NewType

from tempo.api.recurrent_tensor import RecurrentTensor

ObservationsRecurrentTensor = NewType("ObservationsRecurrentTensor", RecurrentTensor)
ActionsRecurrentTensor = NewType("ActionsRecurrentTensor", RecurrentTensor)
ValueRecurrentTensor = NewType("ValueRecurrentTensor", RecurrentTensor)
RewardsRecurrentTensor = NewType("RewardsRecurrentTensor", RecurrentTensor)
TerminationsRecurrentTensor = NewType("TerminationsRecurrentTensor", RecurrentTensor)
TruncationsRecurrentTensor = NewType("TruncationsRecurrentTensor", RecurrentTensor)
