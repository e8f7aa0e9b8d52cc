"""Probability distributions matching torch.distributions (API §6.3)."""

from tempo.api.distributions.categorical import Categorical
from tempo.api.distributions.distribution import Distribution
from tempo.api.distributions.normal import Normal
from tempo.api.distributions.uniform import Uniform

__all__ = ["Categorical", "Distribution", "Normal", "Uniform"]
