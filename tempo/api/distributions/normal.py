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


def _widens(x: RecurrentTensor, p: RecurrentTensor) -> bool:
    """Whether broadcasting `x` against `p` adds dims or domain variables to `x`."""
    if not p.domain.is_contained_in(x.domain):
        return True
    xs, ps = tuple(x.shape), tuple(p.shape)
    if xs == ps:
        return False
    try:
        return tuple(np.broadcast_shapes(xs, ps)) != xs
    except (TypeError, ValueError):  # symbolic dims: let the addition broadcast them
        return True


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

    def _batched(self, x: RecurrentTensor) -> RecurrentTensor:
        """`x` (a function of one parameter) over the batch shape and domain of mu and sigma
        together, as torch.distributions broadcasts its parameters at construction: with
        mu (N, A) and a state-independent sigma (A,), entropy() and stddev are (N, A), so
        `entropy().sum()` counts every sample (it counted sigma's A entries once)."""
        for p in (self.mu, self.sigma):
            if _widens(x, p):
                # zeros carrying p's shape and domain (detached: no gradient to p)
                x = x + p.detach() * 0.0
        return x

    def entropy(self) -> RecurrentTensor:
        return self._batched(self.sigma_entropy())

    def sigma_entropy(self) -> RecurrentTensor:
        """The entropy per entry of sigma, before broadcasting against mu (a policy whose
        sigma is state-independent sums this over the action dims once, not per sample)."""
        return self.sigma.ln() + (0.5 + 0.5 * math.log(2 * math.pi))

    def cdf(self, x: Any) -> RecurrentTensor:
        z = (rt().lift(x) - self.mu) / (self.sigma * math.sqrt(2.0))
        return (z.erf() + 1.0) * 0.5

    @property
    def mean(self) -> RecurrentTensor:
        return self._batched(self.mu)

    @property
    def mode(self) -> RecurrentTensor:
        return self._batched(self.mu)

    @property
    def stddev(self) -> RecurrentTensor:
        return self._batched(self.sigma)

    @property
    def variance(self) -> RecurrentTensor:
        return self._batched(self.sigma * self.sigma)
