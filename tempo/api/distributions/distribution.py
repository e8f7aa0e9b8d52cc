"""`Distribution`: the torch.distributions interface over recurrent tensors (API §6.3).

Samples are fresh per point of the sampling domain (default: the parameters' domain)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.core.domain import Domain, DomainLike

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def rt() -> Any:
    from tempo.api.recurrent_tensor import RecurrentTensor

    return RecurrentTensor


def sampling_domain(domain: DomainLike, *params: RecurrentTensor) -> Domain:
    """`domain` if given, else the union of the parameters' domains."""
    if domain is not None:
        return Domain.from_(domain, none_is_empty=True)
    return Domain.empty().union(*[p.domain for p in params])


class Distribution:
    """Abstract base: subclasses define the density, sampling and moments."""

    def __init__(self, event_shape: Sequence[int] | None = None) -> None:
        self.event_shape = tuple(event_shape or ())

    def sample(self, shape: Sequence[int] | None = None) -> RecurrentTensor:
        raise NotImplementedError

    def log_prob(self, x: Any) -> RecurrentTensor:
        raise NotImplementedError

    def entropy(self) -> RecurrentTensor:
        raise NotImplementedError

    def cdf(self, x: Any) -> RecurrentTensor:
        raise NotImplementedError

    @property
    def mean(self) -> RecurrentTensor:
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self) -> RecurrentTensor:
        raise NotImplementedError(f"{type(self).__name__} has no mode")

    @property
    def stddev(self) -> RecurrentTensor:
        return self.variance.sqrt()

    @property
    def variance(self) -> RecurrentTensor:
        raise NotImplementedError(f"{type(self).__name__} has no variance")
