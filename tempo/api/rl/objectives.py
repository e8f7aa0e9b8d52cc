"""RL objectives over a time symbol `t` (API.md §6.4): n-step returns, bootstrapped n-step
returns, n-step TD residuals and generalised advantage estimation.

Windowed objectives read a dynamic slice `r[.., t:min(t+n, T), ..]` and dot it with the
discounts, so a value at `t` needs only the next `n` rewards (TD(n) keeps O(n) history, the
point of E7). GAE is the backward recurrence `A[t] = δ[t] + γλ·A[t+1]`, computed in closed
form as a (T, T) weight matrix times δ[0:T] (one batched call instead of T dependent steps;
O(T) per point, O(T²) arithmetic).

`T` may be smaller than the true bound of `t` (a truncated window): every objective then
bootstraps from the value at `T`, which exists. With `T` the true bound, nothing past the
end is read. All objectives but `n_step_returns` detach their inputs."""

from __future__ import annotations

import math
from typing import Any

from tempo.api.recurrent_tensor import RecurrentTensor
from tempo.api.tensor_base import label
from tempo.core import index_expr as ie
from tempo.core import naming
from tempo.core.dtype import dtypes
from tempo.core.errors import DomainError, TempoError, user_site


def _time_index(x: RecurrentTensor, t: ie.Symbol, at: Any, what: str) -> tuple[Any, ...]:
    """x's own basis index with `t` replaced by `at`."""
    vars_ = x.unindexed_domain.variables
    if t not in vars_:
        raise DomainError(f"{what} ({label(x)}) have domain "
                          f"{naming.domain_word(x.unindexed_domain)}, without the time "
                          f"dimension {t} the objective runs over: pass tensors over {t}, "
                          f"or the time symbol they have", site=user_site())
    return tuple(at if v.struct_eq(t) else v for v in vars_)


def _bound(x: RecurrentTensor, t: ie.Symbol, T: Any) -> Any:
    return t.as_bound() if T is None else T


def _check(n: int, gamma: float) -> None:
    if int(n) < 1:
        raise TempoError(f"n must be >= 1, got {n}", site=user_site())
    if not 0.0 <= float(gamma) <= 1.0:
        raise TempoError(f"gamma must be in [0, 1], got {gamma}", site=user_site())


def _discounts(length: ie.IntIndexValue, gamma: float) -> RecurrentTensor:
    """[1, γ, γ², ...] of a symbolic length, float32."""
    k = RecurrentTensor.arange(length).cast(dtypes.float32)
    if gamma == 0.0:
        return (k == 0.0).cast(dtypes.float32)
    return (k * math.log(gamma)).exp()


def _pow(gamma: float, e: ie.IntIndexValue) -> RecurrentTensor:
    """γ^e for an index expression e >= 0, float32 scalar."""
    k = RecurrentTensor.from_expr(e).cast(dtypes.float32)
    if gamma == 0.0:
        return (k == 0.0).cast(dtypes.float32)
    return (k * math.log(gamma)).exp()


def _windowed_sum(r: RecurrentTensor, t: ie.Symbol, T: Any, n: int,
                  gamma: float) -> RecurrentTensor:
    stop = ie.max(ie.min(t + n, T), t + 1)  # past T: a 1-long window, masked by _inside
    win = r[_time_index(r, t, ie.Slice(t, stop), "the rewards")]  # (L, *spatial)
    w = _discounts(stop - t, gamma)
    for _ in range(win.ndim - 1):
        w = w.unsqueeze(-1)
    return (win * w).sum(0)


def n_step_returns(r: RecurrentTensor, t: ie.Symbol, T: Any = None, n: int = 5,
                   gamma: float = 0.98) -> RecurrentTensor:
    """G[t] = Σ_{k<n, t+k<T} γ^k r[t+k] (not detached: differentiable in r)."""
    _check(n, gamma)
    r = RecurrentTensor.lift(r)
    T = _bound(r, t, T)
    return _inside(_windowed_sum(r, t, T, n, float(gamma)), t, T)


def _bootstrap(v: RecurrentTensor, t: ie.Symbol, T: Any, n: int,
               gamma: float) -> RecurrentTensor:
    """γ^(j-t)·v[j] at j = min(t+n, T) when j is inside the true bound, else 0."""
    true_T = t.as_bound()
    j = ie.min(t + n, T)
    boot = RecurrentTensor.placeholder(v.shape, v.dtype, domain=v.unindexed_domain)
    inside = t + n < true_T  # min(t+n, T) < true_T: the value at j exists
    if not _same(T, true_T):
        inside = inside | (ie.lift_to_int_ie(T) < true_T)
    at = ie.min(j, true_T - 1)  # = j where `inside` holds; clamped so every read exists
    boot[inside] = v[_time_index(v, t, at, "the values")] * _pow(gamma, j - t)
    boot[True] = RecurrentTensor.zeros(v.shape, v.dtype)
    return boot


def _inside(x: RecurrentTensor, t: ie.Symbol, T: Any) -> RecurrentTensor:
    """x for t < T, zeros past a window T shorter than the true bound."""
    if _same(T, t.as_bound()):
        return x
    out = RecurrentTensor.placeholder(x.shape, x.dtype, domain=x.unindexed_domain)
    out[t < ie.lift_to_int_ie(T)] = x
    out[True] = RecurrentTensor.zeros(x.shape, x.dtype)
    return out


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, ie.IndexExpr) and a.struct_eq(b)


def bootstrapped_n_step_returns(r: RecurrentTensor, v: RecurrentTensor, t: ie.Symbol,
                                T: Any = None, n: int = 5,
                                gamma: float = 0.98) -> RecurrentTensor:
    """n-step return plus γ^L·v[t+L] (L = min(n, T-t)) when that value exists."""
    _check(n, gamma)
    r, v = RecurrentTensor.lift(r).detach(), RecurrentTensor.lift(v).detach()
    T = _bound(r, t, T)
    g = _windowed_sum(r, t, T, n, float(gamma)) + _bootstrap(v, t, T, n, float(gamma))
    return _inside(g, t, T)


def n_step_td_residual(r: RecurrentTensor, v: RecurrentTensor, t: ie.Symbol, T: Any = None,
                       n: int = 5, gamma: float = 0.98) -> RecurrentTensor:
    """Bootstrapped n-step return minus v[t]."""
    v = RecurrentTensor.lift(v).detach()
    return bootstrapped_n_step_returns(r, v, t, T, n, gamma) - v


def gae(r: RecurrentTensor, v: RecurrentTensor, t: ie.Symbol, T: Any = None,
        gamma: float = 0.98, lambda_: float = 0.95) -> RecurrentTensor:
    """A[t] = Σ_{k=t}^{T-1} (γλ)^{k-t} δ[k], δ[k] = r[k] + γ·v[k+1] − v[k] (v[k+1] only where
    it exists: k+1 < true bound). λ=0 is the 1-step TD residual; λ=1 the discounted return
    minus v (bootstrapped when T is not the true bound)."""
    _check(1, gamma)
    if not 0.0 <= float(lambda_) <= 1.0:
        raise TempoError(f"lambda_ must be in [0, 1], got {lambda_}", site=user_site())
    r, v = RecurrentTensor.lift(r).detach(), RecurrentTensor.lift(v).detach()
    T = _bound(r, t, T)
    delta = r + _bootstrap(v, t, T, 1, float(gamma)) - v
    if float(lambda_) == 0.0:
        return _inside(delta, t, T)
    # the backward recurrence A[t] = δ[t] + γλ·A[t+1] in closed form: one (T, T) weight
    # matrix times δ[0:T], read back at t — a batched call, not T dependent steps
    whole = ie.Slice(ie.lift_to_int_ie(0), ie.lift_to_int_ie(T))
    window = delta[_time_index(delta, t, whole, "the TD residuals")]
    adv_all = window.discounted_cum_sum(float(gamma) * float(lambda_), 0, False)
    at = t if _same(T, t.as_bound()) else ie.min(t, ie.lift_to_int_ie(T) - 1)  # in range
    adv = adv_all.index(0, at)
    return _inside(adv, t, T)
