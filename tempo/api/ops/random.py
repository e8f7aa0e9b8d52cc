"""Random ops, all from the one `RandOp` primitive (U[0,1), seeded by the config).

Without `domain` a random tensor has the empty domain: one draw shared by every point
(API §7); with `domain=(t,)` each point of `t` draws fresh values."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tempo.api.ops.creation import _domain, _dt, _with_grad, random
from tempo.api.tensor_base import lift, union_domains
from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike, dtypes
from tempo.core.errors import ArgumentError, ShapeError, user_site
from tempo.core.shape import ShapeLike

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def uniform(shape: ShapeLike = (), low: float = 0.0, high: float = 1.0,
            dtype: DataTypeLike | None = None, domain: DomainLike = None,
            requires_grad: bool | None = None) -> RecurrentTensor:
    """U[low, high) as random() * (high - low) + low, in `dtype` (a Python float scalar
    would promote a float16 draw to float32, API §5: Linear/Conv/GRU(dtype=float16) got
    float32 weights from their default inits)."""
    dt = _dt(dtype)
    u = random(shape, dtype, domain)
    out = u if (low, high) == (0.0, 1.0) else u * (high - low) + low
    return _with_grad(out.cast(dt) if out.dtype != dt else out, requires_grad)


def random_int(low: int = 0, high: int = 10, shape: ShapeLike = (),
               dtype: DataTypeLike | None = None, domain: DomainLike = None,
               requires_grad: bool | None = None) -> RecurrentTensor:
    """Uniform integers in [low, high): floor of a float64 uniform, then cast."""
    if not low < high:
        raise ArgumentError(f"random_int draws from [low, high), which is empty for "
                            f"low={low}, high={high}", site=user_site())
    u = random(shape, dtypes.float64, domain)
    v = (u * float(high - low) + float(low)).floor().minimum(float(high - 1))
    return _with_grad(v.cast(_dt(dtype, dtypes.default_int)), requires_grad)


def random_bool(shape: ShapeLike = (), domain: DomainLike = None,
                requires_grad: bool | None = None) -> RecurrentTensor:
    return _with_grad(random(shape, dtypes.float32, domain) < 0.5, requires_grad)


def normal(shape: ShapeLike = None, dtype: DataTypeLike | None = None,
           domain: DomainLike = None, mean: float = 0.0, std: float = 1.0,
           requires_grad: bool | None = None) -> RecurrentTensor:
    """N(mean, std^2) by Box-Muller on two uniforms drawn together."""
    from tempo.core.shape import Shape

    shp = tuple(Shape.from_(shape))
    dt = _dt(dtype)
    ct = dt if dt.repr_bytes >= 4 else dtypes.float32
    u = random((2, *shp), ct, domain)
    u1, u2 = u.index(0, 0), u.index(0, 1)
    z = ((1.0 - u1).ln() * -2.0).sqrt() * (u2 * (2 * math.pi)).cos()
    if (mean, std) != (0.0, 1.0):
        z = z * std + mean
    return _with_grad(z.cast(dt), requires_grad)


def randn(shape: ShapeLike = (), dtype: DataTypeLike | None = None, domain: DomainLike = None,
          requires_grad: bool | None = None) -> RecurrentTensor:
    return normal(shape, dtype, domain, 0.0, 1.0, requires_grad)


def multinomial(weights: Any, num_samples: int = 1, replacement: bool = False,
                domain: DomainLike = None) -> RecurrentTensor:
    """Indices drawn by inverse CDF: count of normalised cumulative weights <= u.
    1-d weights give (num_samples,), 2-d give (rows, num_samples); int64."""
    w = lift(weights)
    if w.ndim not in (1, 2):
        raise ShapeError(f"multinomial needs 1-d or 2-d weights, got {w.shape}", site=user_site())
    if not replacement and num_samples != 1:
        raise ShapeError("multinomial without replacement supports only num_samples=1",
                         site=user_site())
    wf = w if dtypes.is_float(w.dtype) else w.cast(dtypes.float32)
    dom = union_domains([w.domain, _domain(domain)])
    cdf = wf.cumsum(-1) / wf.sum(-1, keepdim=True)
    rows = tuple(w.shape)[:-1]
    u = random((*rows, num_samples), cdf.dtype, dom)
    count = (cdf.unsqueeze(-2) <= u.unsqueeze(-1)).sum(-1)
    n = w.shape[-1]
    return count.minimum(n - 1).cast(dtypes.int64)


def sample_top_p(probs: Any, p: float = 0.9) -> RecurrentTensor:
    """Nucleus sampling: keep the most likely tokens whose mass (before each) is <= p,
    renormalise, sample; returns (..., 1) indices into `probs`."""
    pr = lift(probs)
    vals, idx = pr.sort(-1, descending=True, stable=True)
    before = vals.cumsum(-1) - vals
    kept = (before > p).where(0.0, vals)
    choice = multinomial(kept, 1)
    return idx.gather(-1, choice)


def sample_likely(probs: Any, above: float = 0.05) -> RecurrentTensor:
    """Sample among entries with probability above `above` (all if none are)."""
    pr = lift(probs)
    kept = (pr > above).where(pr, 0.0)
    any_kept = kept.sum(-1, keepdim=True) > 0
    return multinomial(any_kept.where(kept, pr), 1)


class RandomOps:
    """Random constructors (static) and sampling methods mixed into RecurrentTensor."""

    uniform = staticmethod(uniform)
    random_int = staticmethod(random_int)
    random_bool = staticmethod(random_bool)
    normal = staticmethod(normal)
    randn = staticmethod(randn)

    def multinomial(self, num_samples: int = 1, replacement: bool = False,
                    domain: DomainLike = None) -> RecurrentTensor:
        return multinomial(self, num_samples, replacement, domain)

    def sample_top_p(self, p: float = 0.9) -> RecurrentTensor:
        return sample_top_p(self, p)

    def sample_likely(self, above: float = 0.05) -> RecurrentTensor:
        return sample_likely(self, above)
