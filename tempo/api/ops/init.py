"""Weight initialisers and loading from state dicts.

Uniform/normal initialisers compose the random ops (so they follow the config seed);
`orthogonal_init` uses torch's initialiser on the CPU at record time (seeded from the
config) for an empty domain, or per point through a source UDF."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.ops.creation import _domain, _dt, _with_grad, const, source_with_ts_udf
from tempo.api.ops.random import normal, uniform
from tempo.api.tensor_base import active_ctx
from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike, dtypes
from tempo.core.errors import DTypeError, ShapeError, TempoError, user_site
from tempo.core.shape import Shape, ShapeLike
from tempo.runtime.host_arrays import to_host

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _fans(shape: ShapeLike) -> tuple[int, int]:
    """(fan_in, fan_out) as torch: dims 1 and 0 times the receptive field."""
    dims = [int(d) for d in Shape.from_(shape)]
    if len(dims) < 2:
        raise ShapeError(f"fans need a weight of >= 2 dims, got {tuple(dims)}", site=user_site())
    receptive = math.prod(dims[2:])
    return dims[1] * receptive, dims[0] * receptive


def scaled_uniform(shape: ShapeLike, dtype: DataTypeLike | None = None,
                   domain: DomainLike = None, scale: float = 1.0,
                   requires_grad: bool | None = None) -> RecurrentTensor:
    """U(-scale, scale)."""
    return uniform(shape, -scale, scale, dtype, domain, requires_grad)


def linear_init_uniform(shape: ShapeLike, dtype: DataTypeLike | None = None,
                        domain: DomainLike = None, num_input_features: int | None = None,
                        requires_grad: bool | None = None) -> RecurrentTensor:
    """U(±1/sqrt(fan_in)), fan_in defaulting to shape[1] (torch's nn.Linear init)."""
    fan_in = num_input_features if num_input_features is not None else int(Shape.from_(shape)[1])
    return scaled_uniform(shape, dtype, domain, 1.0 / math.sqrt(fan_in), requires_grad)


def glorot_uniform(shape: ShapeLike, dtype: DataTypeLike | None = None,
                   domain: DomainLike = None, gain: float = 1.0,
                   requires_grad: bool | None = None) -> RecurrentTensor:
    """Xavier: U(±gain*sqrt(6/(fan_in+fan_out)))."""
    fi, fo = _fans(shape)
    return scaled_uniform(shape, dtype, domain, gain * math.sqrt(6.0 / (fi + fo)), requires_grad)


def _leaky_gain(a: float) -> float:
    return math.sqrt(2.0 / (1 + a * a))


def kaiming_uniform(shape: ShapeLike, a: float = 0.01, dtype: DataTypeLike | None = None,
                    domain: DomainLike = None,
                    requires_grad: bool | None = None) -> RecurrentTensor:
    """He: U(±gain(a)*sqrt(3/fan_in)) with the leaky-relu gain."""
    fi, _ = _fans(shape)
    return scaled_uniform(shape, dtype, domain, _leaky_gain(a) * math.sqrt(3.0 / fi),
                          requires_grad)


def kaiming_normal(shape: ShapeLike, dtype: DataTypeLike | None = None, a: float = 0.01,
                   domain: DomainLike = None, requires_grad: bool | None = None) -> RecurrentTensor:
    """He: N(0, (gain(a)/sqrt(fan_in))^2)."""
    fi, _ = _fans(shape)
    return normal(shape, dtype, domain, 0.0, _leaky_gain(a) / math.sqrt(fi), requires_grad)


def orthogonal_init(shape: ShapeLike, dtype: DataTypeLike | None = None,
                    domain: DomainLike = None, gain: float = 1.41421356237,
                    requires_grad: bool | None = None) -> RecurrentTensor:
    """torch.nn.init.orthogonal_ on the CPU."""
    import torch

    dims = tuple(int(d) for d in Shape.from_(shape))
    dt = _dt(dtype)
    ctx = active_ctx()
    # One stream per call (the n-th orthogonal tensor of a context): same-shaped layers must
    # not start identical, and a program's weights still follow the config seed.
    nth = ctx.__dict__.get("_orthogonal_draws", 0)
    ctx.__dict__["_orthogonal_draws"] = nth + 1
    gen = torch.Generator().manual_seed(int(ctx.execution_config.seed) * 1_000_003 + nth)

    def draw() -> Any:
        w = torch.empty(dims, dtype=torch.float64)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (), generator=gen)))
            torch.nn.init.orthogonal_(w, gain=gain)
        return w

    dom = _domain(domain)
    if not dom.variables:
        x = const(draw().numpy().astype(dtypes.to_np(dt)), dtype=dt)
    else:
        x = source_with_ts_udf(lambda ts: draw(), dims, dt, dom)
    return _with_grad(x, requires_grad)


def init_from_statedict(flat_state_dict: Mapping[str, Any],
                        key: str | Callable[[dict], str], shape: ShapeLike | None = None,
                        dtype: DataTypeLike | None = None, domain: DomainLike = None,
                        skip_cast_dev_and_bend: bool = False,
                        requires_grad: bool | None = None) -> RecurrentTensor:
    """A tensor read from `flat_state_dict[key]`; `key` may be a function of the symbol
    values (e.g. the layer index), making this a per-point source."""
    dom = _domain(domain)
    site = user_site()  # a key missing at run time is this call's mistake
    want = dtypes.from_(dtype) if dtype is not None else None

    def fetch(ts: dict) -> Any:
        k = key(ts) if callable(key) else key
        if k not in flat_state_dict:
            raise TempoError(f"init_from_statedict: key {k!r} is not in the state dict",
                             site=site)
        v = flat_state_dict[k]  # torch tensors stay on their device (no host round trip)
        if not hasattr(v, "detach"):
            return np.asarray(v)
        v = v.detach()
        if want is not None:  # e.g. a bfloat16 checkpoint read as float32
            import torch

            tdt = getattr(torch, dtypes.to_np(want).name)
            v = v.to(tdt) if v.dtype != tdt else v
        return v

    sample = fetch({v: 0 for v in dom.variables})
    have = tuple(sample.shape)
    if shape is not None and tuple(int(d) for d in Shape.from_(shape)) != have:
        raise ShapeError(f"init_from_statedict: {key!r} has shape {have}, expected "
                         f"{tuple(Shape.from_(shape))}", site=user_site())
    if want is None and hasattr(sample, "dtype"):
        try:
            want = dtypes.implied(sample)
        except DTypeError:
            raise DTypeError(f"init_from_statedict: {key!r} holds {sample.dtype}, which has no "
                             "Tempo dtype: pass dtype= (or StateDictLoader's cast_to_dtype=) "
                             "to cast it when loaded", site=site) from None
    dt = _dt(want)
    if not dom.variables and not callable(key):
        arr = to_host(sample)
        return _with_grad(const(arr.astype(dtypes.to_np(dt)), dtype=dt), requires_grad)
    return _with_grad(source_with_ts_udf(fetch, have, dt, dom), requires_grad)


def init_from_existing_tensor(t: Any, shape: ShapeLike, dtype: DataTypeLike | None,
                              domain: DomainLike = None) -> RecurrentTensor:
    """Weight tying: `t` itself (as `t.ident()`) after checking shape, dtype and domain."""
    if t.shape != Shape.from_(shape):
        raise ShapeError(f"tied tensor has shape {t.shape}, expected {shape}", site=user_site())
    if dtype is not None and t.dtype != dtypes.from_(dtype):
        raise DTypeError(f"tied tensor has dtype {t.dtype}, expected {dtype}", site=user_site())
    if domain is not None and t.domain != _domain(domain):
        raise ShapeError(f"tied tensor has domain {t.domain}, expected {domain}",
                         site=user_site())
    return t.ident()


def external_init(fn: Callable[..., Any], shape: ShapeLike, dtype: DataTypeLike | None = None,
                  domain: DomainLike = None) -> RecurrentTensor:
    """`fn(shape)` (or `fn()`): a const for an empty domain, else a per-point source."""
    dims = tuple(int(d) for d in Shape.from_(shape))
    takes_shape = bool(inspect.signature(fn).parameters)
    dt = _dt(dtype)

    def call(ts: dict) -> Any:
        return fn(dims) if takes_shape else fn()

    dom = _domain(domain)
    if not dom.variables:
        v = call({})
        arr = to_host(v)
        return const(arr.astype(dtypes.to_np(dt)), dtype=dt)
    return source_with_ts_udf(call, dims, dt, dom)


class InitOps:
    """Initialisers as static methods of RecurrentTensor."""

    scaled_uniform = staticmethod(scaled_uniform)
    linear_init_uniform = staticmethod(linear_init_uniform)
    glorot_uniform = staticmethod(glorot_uniform)
    kaiming_uniform = staticmethod(kaiming_uniform)
    kaiming_normal = staticmethod(kaiming_normal)
    orthogonal_init = staticmethod(orthogonal_init)
    init_from_statedict = staticmethod(init_from_statedict)
    init_from_existing_tensor = staticmethod(init_from_existing_tensor)
    external_init = staticmethod(external_init)
