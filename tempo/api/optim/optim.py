"""Optimizers as recurrences: each parameter is defined at every non-initial point of its
accumulation domain from the previous point's value and gradient (API §6.2)."""

from __future__ import annotations

import abc
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.nn.module import origin_condition, update_prev_index
from tempo.api.nn.utils import clip_norm, total_norm
from tempo.api.tensor_base import label
from tempo.core import naming
from tempo.core.domain import Domain, DomainLike
from tempo.core.errors import ArgumentError, DefinitionError, DomainError, TempoError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _rt() -> Any:
    from tempo.api.recurrent_tensor import RecurrentTensor

    return RecurrentTensor


def _tensors(xs: Any, what: str) -> list[RecurrentTensor]:
    """The optimizer's `params` or `buffers` as a list of tensors; a module (or anything
    else) given in their place is the user's error, named at their line."""
    from tempo.api.nn.module import Module

    if isinstance(xs, Module):
        attr = "parameters" if what == "params" else "buffers"
        raise TempoError(f"an optimizer's {what} are a list of tensors, got the module "
                         f"{type(xs).__name__}: pass its .{attr}", site=user_site())
    out = list(xs)
    for x in out:
        if not isinstance(x, _rt()):
            raise TempoError(f"an optimizer's {what} are tensors, got {type(x).__name__}",
                             site=user_site())
    return out


def _as(x: Any, dtype: Any) -> Any:
    """`x` in `dtype`: state kept in the parameters' dtype, as torch.optim keeps it (a
    float16 parameter's moments would be float32 after a Python-float factor, API §5)."""
    x = _rt().lift(x)
    return x.cast(dtype) if x.dtype != dtype else x


def _check_range(name: str, value: float, low: float, high: float | None = None) -> None:
    """torch.optim's argument checks: `low <= value` (and `value < high`)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentError(f"{name} must be a Python number, got {type(value).__name__}"
                            + (" (a schedule over iterations is not an optimizer argument: "
                               "write the update yourself, p[i + 1] = p - lr_i * p.grad)"
                               if hasattr(value, "tensor_id") else ""), site=user_site())
    if value < low or (high is not None and value >= high):
        want = f">= {low}" if high is None else f"in [{low}, {high})"
        raise ArgumentError(f"invalid {name}={value}: it must be {want}", site=user_site())


class Optimizer(abc.ABC):
    """Common machinery: domain checks, gradient clipping and the parameter recurrence."""

    def __init__(
        self,
        params: Sequence[RecurrentTensor],
        buffers: Sequence[RecurrentTensor] | None,
        lr: float,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        independent_domain: DomainLike = None,
    ) -> None:
        _check_range("lr", lr, 0.0)
        if max_norm is not None:
            _check_range("max_norm", max_norm, 0.0)
        self.params = _tensors(params, "params")
        self.buffers = _tensors(buffers or [], "buffers")
        if not self.params:
            raise TempoError("an optimizer needs at least one parameter", site=user_site())
        self.domain: Domain = self.params[0].unindexed_domain
        for p in self.params[1:]:
            if p.unindexed_domain != self.domain:
                raise DomainError(
                    f"all parameters must share one domain: {naming.domain_word(self.domain)} "
                    f"vs {naming.domain_word(p.unindexed_domain)} ({label(p)})",
                    site=user_site(),
                )
        indep = Domain.from_(independent_domain, none_is_empty=True)
        self.acc_domain = self.domain.difference(indep)
        if self.acc_domain.is_empty():
            raise DomainError(
                f"parameters over {naming.domain_word(self.domain)} have no update dimension "
                f"left after removing the independent domain {naming.domain_word(indep)}",
                site=user_site(),
            )
        self.lr, self.max_norm, self.norm_type = lr, max_norm, norm_type
        self.prev = tuple(update_prev_index(self.domain, self.acc_domain))
        self.origin = origin_condition(self.acc_domain)

    # ---------------------------------------------------------------- helpers
    def step_count(self, dtype: Any = "float32") -> RecurrentTensor:
        """1-based step number at the current point (linear index over the accumulation
        domain plus one), as `dtype` (float32 by default)."""
        rt = _rt()
        return (rt.from_expr(self.acc_domain.linearized_count_expr) + 1).cast(dtype)

    def float_dtype(self) -> Any:
        """The float dtype of the parameters' update arithmetic: float64 parameters get
        float64 bias corrections (float32 ones put ~1e-7 relative error into every step,
        as torch.optim, which computes them in Python floats, does not)."""
        from tempo.core.dtype import dtypes

        floats = [p.dtype for p in self.params if dtypes.is_float(p.dtype)]
        return dtypes.float64 if dtypes.float64 in floats else dtypes.float32

    def moment(self, like: RecurrentTensor, first: Any, recur: Any) -> RecurrentTensor:
        """A state tensor over the parameter domain: `first` at the origin, else
        `recur(previous value)`."""
        m = _rt().placeholder(like.shape, like.dtype, domain=self.domain, requires_grad=False)
        m[self.origin] = _as(first, like.dtype)
        m[True] = _as(recur(m[self.prev]), like.dtype)
        return m

    def _grads(self) -> list[RecurrentTensor]:
        grads = []
        for p in self.params:
            if p.grad is None:
                raise TempoError(
                    f"the parameter {label(p)} has no .grad: call "
                    "loss.backward() before optimizer.step()",
                    site=user_site(),
                )
            grads.append(p.grad.detach())
        if self.max_norm is not None:
            grads, _ = clip_norm(grads, self.max_norm, self.norm_type)
        return grads

    @abc.abstractmethod
    def updates(
        self, params: list[RecurrentTensor], grads: list[RecurrentTensor]
    ) -> list[RecurrentTensor]:
        """What to subtract from each parameter at the current point."""

    def step(self) -> None:
        """Define every parameter after the origin: p = p[prev] - update[prev]. A program
        calls it once: it is the rule of every iteration, not one iteration's update."""
        self._check_not_defined()
        grads = self._grads()
        params = [p.detach() for p in self.params]
        for p, pd, u in zip(self.params, params, self.updates(params, grads)):
            p[True] = _as(pd - u, p.dtype)[self.prev]  # float16: float32 after lr (§5)
        for b in self.buffers:
            b[True] = b[self.prev]

    def _check_not_defined(self) -> None:
        """A parameter already defined at every later point (an earlier `step()` or
        `fixed()`): a second definition would never be used, since the first branch
        whose condition holds wins (API §3.5), so a second step() would silently do
        nothing rather than update twice."""
        for p in self.params + self.buffers:
            done = [e for e in p.sdg.in_edges[p.op.op_id] if e.cond is None]
            if done:
                raise DefinitionError(
                    f"step() would define {label(p)} again, but it is already defined at "
                    f"every update point by {naming.at_site(done[0].site)}: step() is the "
                    "update rule of every iteration (iteration i uses the gradient of "
                    "iteration i-1), so call it once per program",
                    site=user_site())

    def zero_grad(self) -> None:
        """Gradients are per point already; kept for torch-shaped programs."""
        return None


class SGD(Optimizer):
    """torch.optim.SGD: weight decay added to the gradient, momentum buffer, nesterov."""

    def __init__(
        self,
        params: Sequence[RecurrentTensor],
        buffers: Sequence[RecurrentTensor] | None = None,
        lr: float = 0.001,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        independent_domain: DomainLike = None,
    ) -> None:
        super().__init__(params, buffers, lr, max_norm, norm_type, independent_domain)
        _check_range("momentum", momentum, 0.0)
        _check_range("weight_decay", weight_decay, 0.0)
        if nesterov and momentum <= 0:
            raise ArgumentError("nesterov needs momentum > 0", site=user_site())
        self.momentum, self.weight_decay, self.nesterov = momentum, weight_decay, nesterov

    def updates(
        self, params: list[RecurrentTensor], grads: list[RecurrentTensor]
    ) -> list[RecurrentTensor]:
        out = []
        for p, g in zip(params, grads):
            if self.weight_decay:
                g = g + p * self.weight_decay
            d = g
            if self.momentum:
                mu = self.momentum
                g_ = g
                buf = self.moment(g, g, lambda prev, g_=g_, mu=mu: prev * mu + g_)
                d = g + buf * mu if self.nesterov else buf
            out.append(d * self.lr)
        return out


class LAMB(Optimizer):
    """LAMB (layer-wise trust ratio over Adam steps); with `adam=True` it is Adam/AdamW and
    follows torch.optim.Adam numerically (bias-corrected moments, eps outside the sqrt)."""

    def __init__(
        self,
        params: Sequence[RecurrentTensor],
        buffers: Sequence[RecurrentTensor] | None = None,
        lr: float = 0.001,
        b1: float = 0.9,
        b2: float = 0.999,
        eps: float = 1e-6,
        wd: float = 0.0,
        adam: bool = False,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        independent_domain: DomainLike = None,
    ) -> None:
        super().__init__(params, buffers, lr, max_norm, norm_type, independent_domain)
        _check_range("b1", b1, 0.0, 1.0)
        _check_range("b2", b2, 0.0, 1.0)
        _check_range("eps", eps, 0.0)
        _check_range("wd", wd, 0.0)
        self.b1, self.b2, self.eps, self.wd, self.adam = b1, b2, eps, wd, adam

    def updates(
        self, params: list[RecurrentTensor], grads: list[RecurrentTensor]
    ) -> list[RecurrentTensor]:
        rt = _rt()
        b1, b2 = self.b1, self.b2
        dt = self.float_dtype()
        step = self.step_count(dt)
        bc1 = 1.0 - rt.const(b1, dtype=dt) ** step
        bc2_sqrt = (1.0 - rt.const(b2, dtype=dt) ** step).sqrt()
        out = []
        for p, g in zip(params, grads):
            m = self.moment(g, g * (1.0 - b1), lambda prev, g=g: prev * b1 + g * (1.0 - b1))
            gg = g * g
            v = self.moment(g, gg * (1.0 - b2), lambda prev, gg=gg: prev * b2 + gg * (1.0 - b2))
            adam_step = (m / bc1) / (v.sqrt() / bc2_sqrt + self.eps)
            if self.adam:
                upd = adam_step * self.lr
                if self.wd:
                    upd = upd + p * (self.lr * self.wd)
            else:
                r = adam_step + p * self.wd if self.wd else adam_step
                w_norm, r_norm = total_norm([p]), total_norm([r])
                ok = (w_norm > 0.0) & (r_norm > 0.0)
                trust = ok.where(w_norm / r_norm.maximum(1e-30), 1.0)
                upd = r * (trust * self.lr)
            out.append(upd)
        return out


_TORCH_ONLY = {"amsgrad", "foreach", "maximize", "capturable", "differentiable", "fused",
               "dampening"}


def _torch_spellings(name: str, kw: dict[str, Any], b1: float, b2: float,
                     wd: float | None) -> tuple[float, float, float | None]:
    """torch.optim's spellings of the Adam family's arguments (what a PyTorch user types
    first): `betas=(b1, b2)`, and `weight_decay=` where it means the same as our `wd`
    (AdamW: decoupled). Anything else is an ArgumentError naming our arguments, not
    Python's bare TypeError."""
    kw = dict(kw)
    if "betas" in kw:
        betas = kw.pop("betas")
        if (b1, b2) != (0.9, 0.999):
            raise ArgumentError(f"{name}() takes b1/b2 or betas (their torch spelling), not "
                                "both", site=user_site())
        try:
            b1, b2 = (float(b) for b in betas)
        except (TypeError, ValueError):
            raise ArgumentError(f"{name}(betas=...) takes a pair (b1, b2), got {betas!r}",
                                site=user_site()) from None
    if "weight_decay" in kw:
        w = kw.pop("weight_decay")
        if wd is None:
            if w:
                raise ArgumentError(
                    f"{name}() has no weight decay: torch's Adam(weight_decay=) adds "
                    "weight_decay * p to the gradient before the moments, which Tempo's Adam "
                    "does not do. Use AdamW(wd=...) for decoupled weight decay, or add "
                    "0.5 * weight_decay * (p ** 2).sum() to the loss for torch's L2 form",
                    site=user_site())
        else:
            wd = float(w)
    if kw:
        k = sorted(kw)[0]
        why = " (a torch.optim option Tempo's optimizers do not have)" if k in _TORCH_ONLY \
            else ""
        raise ArgumentError(f"{name}() got an unexpected keyword argument {k!r}{why}; its "
                            "arguments are params, buffers, lr, b1, b2 (torch: betas), eps, "
                            + ("wd (torch: weight_decay), " if wd is not None else "")
                            + "max_norm, norm_type, independent_domain (API.md 6.2)",
                            site=user_site())
    return b1, b2, wd


def Adam(
    params: Sequence[RecurrentTensor],
    buffers: Sequence[RecurrentTensor] | None = None,  # noqa: N802
    lr: float = 0.001,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    independent_domain: DomainLike = None,
    **torch_kw: Any,
) -> LAMB:
    """torch.optim.Adam (no weight decay) as `LAMB(adam=True)`."""
    b1, b2, _ = _torch_spellings("Adam", torch_kw, b1, b2, None)
    return LAMB(
        params, buffers, lr, b1, b2, eps, 0.0, True, max_norm, norm_type, independent_domain
    )


def AdamW(
    params: Sequence[RecurrentTensor],
    buffers: Sequence[RecurrentTensor] | None = None,  # noqa: N802
    lr: float = 0.001,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    wd: float = 0.01,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    independent_domain: DomainLike = None,
    **torch_kw: Any,
) -> LAMB:
    """torch.optim.AdamW (decoupled weight decay) as `LAMB(adam=True, wd=wd)`."""
    if "weight_decay" in torch_kw and wd != 0.01:
        raise ArgumentError("AdamW() takes wd or weight_decay (its torch spelling), not both",
                            site=user_site())
    b1, b2, wd_ = _torch_spellings("AdamW", torch_kw, b1, b2, wd)
    wd = wd if wd_ is None else wd_
    return LAMB(params, buffers, lr, b1, b2, eps, wd, True, max_norm, norm_type, independent_domain)
