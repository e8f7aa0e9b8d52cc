"""`Distribution`: the torch.distributions interface over recurrent tensors (API §6.3).

Samples are fresh per point of the sampling domain (default: the parameters' domain)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.core import naming
from tempo.core.domain import Domain, DomainLike
from tempo.core.errors import ShapeError, UnsupportedError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def rt() -> Any:
    from tempo.api.recurrent_tensor import RecurrentTensor

    return RecurrentTensor


def check_params_broadcast(dist: str, names: tuple[str, str], a: RecurrentTensor,
                           b: RecurrentTensor) -> None:
    """Two parameters whose (static) shapes do not broadcast, named as the user passed
    them; torch.distributions raises at construction too."""
    sa, sb = a.shape, b.shape
    if not (sa.is_static() and sb.is_static()):
        return
    try:
        np.broadcast_shapes(tuple(sa.as_static()), tuple(sb.as_static()))
    except ValueError:
        raise ShapeError(f"{dist}: {names[0]} of shape {naming.shape_word(sa)} and "
                         f"{names[1]} of shape {naming.shape_word(sb)} do not broadcast",
                         site=user_site()) from None


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
