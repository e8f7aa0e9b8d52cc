"""`Uniform(low, high)`: constant density on [low, high); like the original, `log_prob`
does not check the range."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.distributions.distribution import (
    Distribution,
    check_params_broadcast,
    rt,
    sampling_domain,
)
from tempo.core.domain import DomainLike
from tempo.core.errors import UnsupportedError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


class Uniform(Distribution):
    def __init__(self, low: Any, high: Any, domain: DomainLike = None) -> None:
        super().__init__()
        self.low, self.high = rt().lift(low), rt().lift(high)
        check_params_broadcast("Uniform", ("low", "high"), self.low, self.high)
        self.domain = sampling_domain(domain, self.low, self.high)

    def sample(self, shape: Sequence[int] | None = None) -> RecurrentTensor:
        width = self.high - self.low
        u = rt().random(shape=(*tuple(shape or ()), *tuple(width.shape)), domain=self.domain)
        return (self.low + u * width).detach()

    def log_prob(self, x: Any) -> RecurrentTensor:
        lp = -(self.high - self.low).ln()
        x = rt().lift(x)
        return lp if tuple(x.shape) == tuple(lp.shape) else lp + x * 0.0

    def entropy(self) -> RecurrentTensor:
        return (self.high - self.low).ln()

    def cdf(self, x: Any) -> RecurrentTensor:
        r = (rt().lift(x) - self.low) / (self.high - self.low)
        return r.maximum(0.0).minimum(1.0)

    @property
    def mean(self) -> RecurrentTensor:
        return (self.high + self.low) * 0.5

    @property
    def variance(self) -> RecurrentTensor:
        w = self.high - self.low
        return w * w * (1.0 / 12.0)

    @property
    def stddev(self) -> RecurrentTensor:
        return self.variance.sqrt()

    @property
    def mode(self) -> RecurrentTensor:
        raise UnsupportedError("Uniform has no mode", site=user_site())
