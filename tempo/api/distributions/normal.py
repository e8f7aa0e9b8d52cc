"""`Normal(mu, sigma)`: Gaussian density, entropy, cdf (via erf) and reparameterised
samples (detached, as torch's `sample`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.distributions.distribution import (
    Distribution,
    check_params_broadcast,
    rt,
    sampling_domain,
)
from tempo.core.domain import DomainLike

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _batch_shape(*xs: RecurrentTensor) -> tuple[Any, ...]:
    return tuple((xs[0] + xs[1]).shape) if len(xs) > 1 else tuple(xs[0].shape)


class Normal(Distribution):
    def __init__(self, mu: Any, sigma: Any, domain: DomainLike = None) -> None:
        super().__init__()
        self.mu, self.sigma = rt().lift(mu), rt().lift(sigma)
        check_params_broadcast("Normal", ("mu", "sigma"), self.mu, self.sigma)
        self.domain = sampling_domain(domain, self.mu, self.sigma)

    def rsample(self, shape: Sequence[int] | None = None) -> RecurrentTensor:
        """mu + sigma·eps with eps ~ N(0, 1) fresh per point; differentiable in mu, sigma."""
        mu, sigma = self.mu, self.sigma
        # right-aligned broadcast, as torch: mu (N, A) with a state-independent sigma (A,)
        batch = tuple(np.broadcast_shapes(tuple(mu.shape), tuple(sigma.shape)))
        eps = rt().normal(shape=(*tuple(shape or ()), *batch), domain=self.domain)
        return mu + sigma * eps

    def sample(self, shape: Sequence[int] | None = None) -> RecurrentTensor:
        return self.rsample(shape).detach()

    def log_prob(self, x: Any) -> RecurrentTensor:
        x = rt().lift(x).detach()
        var = self.sigma * self.sigma
        return (
            -((x - self.mu) ** 2) / (var * 2.0) - self.sigma.ln() - math.log(math.sqrt(2 * math.pi))
        )

    def entropy(self) -> RecurrentTensor:
        return self.sigma.ln() + (0.5 + 0.5 * math.log(2 * math.pi))

    def cdf(self, x: Any) -> RecurrentTensor:
        z = (rt().lift(x) - self.mu) / (self.sigma * math.sqrt(2.0))
        return (z.erf() + 1.0) * 0.5

    @property
    def mean(self) -> RecurrentTensor:
        return self.mu

    @property
    def mode(self) -> RecurrentTensor:
        return self.mu

    @property
    def stddev(self) -> RecurrentTensor:
        return self.sigma

    @property
    def variance(self) -> RecurrentTensor:
        return self.sigma * self.sigma
