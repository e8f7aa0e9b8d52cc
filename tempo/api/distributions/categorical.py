"""`Categorical` over the last dim, from probabilities or logits (torch semantics)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from tempo.api.distributions.distribution import Distribution, rt, sampling_domain
from tempo.core.domain import DomainLike
from tempo.core.dtype import dtypes
from tempo.core.errors import ArgumentError, TempoError, UnsupportedError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


class Categorical(Distribution):
    """Exactly one of `probs` (renormalised) or `logits` (log-softmax normalised)."""

    def __init__(self, probs: Any = None, logits: Any = None, domain: DomainLike = None) -> None:
        super().__init__()
        if (probs is None) == (logits is None):
            raise TempoError("Categorical takes exactly one of probs or logits", site=user_site())
        if probs is not None:
            p = rt().lift(probs)
            self.probs = p / p.sum(-1, keepdim=True)
            # as torch's probs_to_logits: log of the probs clamped to [eps, 1 - eps], so a
            # zero-probability class has a finite log-prob (-15.9 in float32), not -inf
            # (which would turn `log_prob * 0-advantage` into NaN)
            eps = float(ml_dtypes.finfo(dtypes.to_np(self.probs.dtype)).eps)  # (+ bfloat16)
            self.logits = self.probs.clip(eps, 1.0 - eps).ln()
        else:
            lg = rt().lift(logits)
            self.logits = lg.log_softmax(-1)  # one fused primitive
            self.probs = self.logits.exp()
        self.domain = sampling_domain(domain, self.probs)

    def sample(self, shape: Sequence[int] | None = None) -> RecurrentTensor:
        """Class indices, fresh per point of the domain; `shape` leads like torch's."""
        n = math.prod(shape) if shape else 1
        s = self.probs.detach().multinomial(n, replacement=True, domain=self.domain)
        if not shape:
            return s.squeeze(s.ndim - 1)
        if s.ndim == 1:
            return s.reshape(tuple(shape))
        return s.permute((s.ndim - 1, *range(s.ndim - 1))).reshape((*shape, *tuple(s.shape)[:-1]))

    def log_prob(self, x: Any) -> RecurrentTensor:
        k = _class_indices(x, rt().lift(x), tuple(self.logits.shape)[-1])
        if k.dtype not in (dtypes.int32, dtypes.int64):  # torch kernels index with these only
            k = k.cast(dtypes.default_int)
        logits = self.logits
        if logits.ndim == 1 and k.ndim == 0:
            return logits.index(0, k)
        # torch broadcasts the value against the batch shape (a scalar action for logits
        # (1, K), or sample dims before the batch dims)
        batch, ks = tuple(logits.shape)[:-1], tuple(k.shape)
        if ks != batch and all(isinstance(d, int) for d in (*batch, *ks)):
            try:
                target = tuple(np.broadcast_shapes(ks, batch))
            except ValueError:
                raise TempoError(f"log_prob value of shape {ks} does not broadcast against the "
                                 f"distribution's batch shape {batch}", site=user_site()) from None
            k = k.expand(target) if ks != target else k
            if batch != target:
                logits = logits.expand((*target, tuple(logits.shape)[-1]))
        return logits.gather(-1, k.unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> RecurrentTensor:
        low = float(ml_dtypes.finfo(dtypes.to_np(self.logits.dtype)).min)  # torch: 0·log 0 = 0
        return -(self.probs * self.logits.maximum(low)).sum(-1)

    @property
    def mode(self) -> RecurrentTensor:
        return self.probs.argmax(-1)

    @property
    def mean(self) -> RecurrentTensor:
        raise UnsupportedError("Categorical has no mean", site=user_site())

    @property
    def variance(self) -> RecurrentTensor:
        raise UnsupportedError("Categorical has no variance", site=user_site())

    @property
    def stddev(self) -> RecurrentTensor:
        raise UnsupportedError("Categorical has no stddev", site=user_site())


def _class_indices(x: Any, k: RecurrentTensor, n: Any) -> RecurrentTensor:
    """`k` checked against the support {0, ..., n-1}, as torch.distributions' validate_args
    does (a ValueError): casting 1.5 to the class 1 gave a silent number. A value known
    when recorded (a Python number, a numpy array, a constant) is checked now; a float
    tensor computed by the program (torch accepts floats holding integers) at run time,
    by a check at each point; an integer tensor's range is the gather's (a run-time
    check there would cost every learner's log_prob)."""
    from tempo.core.op_sources import ConstOp

    site = user_site()
    op = k.op
    if isinstance(x, bool | int | float | np.ndarray | np.number):
        vals: np.ndarray | None = np.asarray(x)
    elif isinstance(op, ConstOp) and not k.is_indexed:
        vals = np.asarray(op.value)
    else:
        vals = None
    if vals is not None:
        _check_support(vals, n, site)
        return k
    if not dtypes.is_float(k.dtype):
        return k
    return k.map_udf(lambda v: _check_support(v, n, site))


def _check_support(v: Any, n: Any, site: str) -> Any:
    """`v` itself, when every value is a class index below `n`."""
    a = np.asarray(v.detach().cpu() if hasattr(v, "detach") else v).astype(np.float64)
    bad = (a != np.floor(a)) | (a < 0) | ((a >= n) if isinstance(n, int) else False)
    if np.any(bad):
        first = a[bad].flat[0]
        word = f"{first:g}" if first == np.floor(first) else repr(float(first))
        top = f"0..{n - 1}" if isinstance(n, int) else "0..K-1"
        raise ArgumentError(f"Categorical.log_prob takes class indices {top} (its support; "
                            f"torch.distributions raises ValueError here), got {word}: "
                            "a value that is not an integer class is not cast to one",
                            site=site)
    return v
