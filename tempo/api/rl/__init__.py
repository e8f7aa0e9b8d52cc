"""Tempo's RL library (API.md §6.4): objectives and typed aliases at the top level;
environments under `env`, networks under `networks`, replay buffers under `replay_buffer`."""

from tempo.api.rl.objectives import (
    bootstrapped_n_step_returns,
    gae,
    n_step_returns,
    n_step_td_residual,
)
from tempo.api.rl.types import (
    ActionsRecurrentTensor,
    ObservationsRecurrentTensor,
    RewardsRecurrentTensor,
    TerminationsRecurrentTensor,
    TruncationsRecurrentTensor,
    ValueRecurrentTensor,
)

__all__ = [
    "ActionsRecurrentTensor", "ObservationsRecurrentTensor", "RewardsRecurrentTensor",
    "TerminationsRecurrentTensor", "TruncationsRecurrentTensor", "ValueRecurrentTensor",
    "bootstrapped_n_step_returns", "gae", "n_step_returns", "n_step_td_residual",
]
