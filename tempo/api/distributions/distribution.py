"""`Distribution`: the torch.distributions interface over recurrent tensors (API §6.3).

Samples are fresh per point of the sampling domain (default: the parameters' domain)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.core.domain import Domain, DomainLike
from tempo.core.errors import UnsupportedError, user_site

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


class Distribution(abc.ABC):
    """Abstract base: subclasses define the density, sampling and moments."""

    def __init__(self, event_shape: Sequence[int] | None = None) -> None:
        self.event_shape = tuple(event_shape or ())

    @abc.abstractmethod
    def sample(self, shape: Sequence[int] | None = None) -> RecurrentTensor: ...

    @abc.abstractmethod
    def log_prob(self, x: Any) -> RecurrentTensor: ...

    @abc.abstractmethod
    def entropy(self) -> RecurrentTensor: ...

    def cdf(self, x: Any) -> RecurrentTensor:
        raise UnsupportedError(f"{type(self).__name__} has no cdf", site=user_site())

    @property
    def mean(self) -> RecurrentTensor:
        raise UnsupportedError(f"{type(self).__name__} has no mean", site=user_site())

    @property
    def mode(self) -> RecurrentTensor:
        raise UnsupportedError(f"{type(self).__name__} has no mode", site=user_site())

    @property
    def stddev(self) -> RecurrentTensor:
        return self.variance.sqrt()

    @property
    def variance(self) -> RecurrentTensor:
        raise UnsupportedError(f"{type(self).__name__} has no variance", site=user_site())
