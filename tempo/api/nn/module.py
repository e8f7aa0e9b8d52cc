"""`Module`: parameters as placeholders that evolve along an update domain (API §6.1).

A parameter is defined at the update-domain origin by its initialiser; later points are
defined by an optimizer (`Optimizer.step`) or by `fixed()`."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tempo.core import index_expr as ie
from tempo.core import naming
from tempo.core.domain import Domain, DomainLike
from tempo.core.errors import DomainError, UnsupportedError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _rt() -> Any:
    from tempo.api.recurrent_tensor import RecurrentTensor

    return RecurrentTensor


def float_input(x: Any, layer: str) -> RecurrentTensor:
    """`x` as a tensor a layer with float weights can read: as torch.nn's layers, integer
    and bool inputs are refused (token ids into a Linear are a mistake: the promotion
    rules would silently cast the ids to floats and multiply them)."""
    from tempo.api.tensor_base import label
    from tempo.core import naming
    from tempo.core.dtype import dtypes
    from tempo.core.errors import DTypeError

    x = _rt().lift(x)
    if not dtypes.is_float(x.dtype):
        raise DTypeError(
            f"{layer} needs a float input, but {label(x)} has dtype "
            f"{naming.dtype_word(x.dtype)}: integer ids go through nn.Embedding; to use the "
            "numbers themselves, cast first (x.cast(dtypes.float32))", site=user_site())
    return x


def update_prev_index(full: Domain, update: Domain) -> ie.IndexSequence:
    """The read of the previous update step: lexicographic predecessor over `update`, own
    variable elsewhere (a single update var reads `v-1`; callers guard `v == 0` first)."""
    if len(update) == 1:
        prev: dict[str, Any] = {update.variables[0].name: update.variables[0] - 1}
    else:
        prev = {v.name: m for v, m in zip(update.variables, update.lex_prev_expr)}
    return ie.IndexSequence(tuple(prev[v.name] if v.name in prev else v for v in full.variables))


def origin_condition(update: Domain) -> ie.BooleanIndexValue:
    """`v0 == 0 and v1 == 0 ...` over the update domain (True when it is empty)."""
    cond: ie.BooleanIndexValue = ie.ConstBool(True)
    for v in update.variables:
        cond = cond & v.symb_eq(0)
    return cond


class Module:
    """Base of every layer: owns parameters and buffers over `domain ∪ independent_domain`."""

    def __init__(self, domain: DomainLike = None, independent_domain: DomainLike = None) -> None:
        self.domain = Domain.from_(domain, none_is_empty=True)
        self.independent_domain = Domain.from_(independent_domain, none_is_empty=True)
        if not self.domain.intersect(self.independent_domain).is_empty():
            raise DomainError(
                f"update domain {self.domain} and independent domain "
                f"{self.independent_domain} must be disjoint",
                site=user_site(),
            )
        self.full_dom = self.domain.union(self.independent_domain)
        self._params: list[tuple[RecurrentTensor, bool]] = []
        self._buffers: list[RecurrentTensor] = []
        self.training = True  # dropout layers draw masks only in training mode

    # ---------------------------------------------------------------- creation
    def _placeholder_from(self, init_rt: Any, requires_grad: bool) -> RecurrentTensor:
        rt = _rt()
        init = rt.lift(init_rt)
        from tempo.api.tempo_context_manager import get_active_ctx_manager

        with get_active_ctx_manager().tag_region(naming.PARAM_TAG):
            p = rt.placeholder(
                init.shape, init.dtype, domain=self.full_dom, requires_grad=requires_grad
            )
        p[origin_condition(self.domain)] = init
        return p

    def param_from_init(self, init_rt: Any, regularize: bool = True) -> RecurrentTensor:
        """A trainable parameter, `init_rt` at the update origin."""
        p = self._placeholder_from(init_rt, True)
        self._params.append((p, regularize))
        return p

    def bias_from_init(self, init_rt: Any) -> RecurrentTensor:
        return self.param_from_init(init_rt, regularize=False)

    def buffer_from_init(self, init_rt: Any) -> RecurrentTensor:
        """Non-trainable state, defined like a parameter (`fixed()` also holds it)."""
        b = self._placeholder_from(init_rt, False)
        self._buffers.append(b)
        return b

    # ---------------------------------------------------------------- traversal
    def children(self) -> Iterator[tuple[str, Module]]:
        for name, v in vars(self).items():
            if isinstance(v, Module):
                yield name, v
            elif isinstance(v, list | tuple):
                for k, m in enumerate(v):
                    if isinstance(m, Module):
                        yield f"{name}_{k}" if name != "modules" else str(k), m

    @property
    def parameters(self) -> list[RecurrentTensor]:
        out = [p for p, _ in self._params]
        for _, m in self.children():
            out.extend(m.parameters)
        return _unique(out)

    @property
    def reg_parameters(self) -> list[RecurrentTensor]:
        out = [p for p, r in self._params if r]
        for _, m in self.children():
            out.extend(m.reg_parameters)
        return _unique(out)

    @property
    def buffers(self) -> list[RecurrentTensor]:
        out = list(self._buffers)
        for _, m in self.children():
            out.extend(m.buffers)
        return _unique(out)

    def fixed(self) -> Module:
        """Hold every parameter and buffer constant along the update domain."""
        for p in self.parameters + self.buffers:
            if not self.domain.is_empty():
                p[True] = p[tuple(update_prev_index(p.unindexed_domain, self.domain))]
        return self

    def state_dict(self) -> dict[str, Any]:
        sd: dict[str, Any] = {f"param_{k}": p for k, (p, _) in enumerate(self._params)}
        sd.update({f"buffer_{k}": b for k, b in enumerate(self._buffers)})
        for name, m in self.children():
            sd[name] = m.state_dict()
        return sd

    def flat_state_dict(self) -> dict[str, RecurrentTensor]:
        out: dict[str, RecurrentTensor] = {}

        def walk(prefix: str, d: dict[str, Any]) -> None:
            for k, v in d.items():
                key = f"{prefix}.{k}" if prefix else k
                if isinstance(v, dict):
                    walk(key, v)
                else:
                    out[key] = v

        walk("", self.state_dict())
        return out

    def __getitem__(self, key: Any) -> Module:
        """A copy whose parameters and buffers are all read at `key` (e.g. `net[i-1]`)."""
        remap = {id(p): p[key] for p in self.parameters + self.buffers}
        return _reindexed(self, remap)

    def __iter__(self) -> Iterator[Any]:
        """Not iterable: without this, `list(module)` (e.g. `SGD(module)` for
        `SGD(module.parameters)`) would call `module[0]`, `module[1]`, ... forever."""
        raise TypeError(f"a {type(self).__name__} is not iterable: use .parameters for its "
                        "parameters (e.g. SGD(model.parameters, ...))")

    def train(self, mode: bool = True) -> Module:
        """Set training mode (affects dropout) here and in every sub-module, as torch."""
        self.training = mode
        for _, m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    # ---------------------------------------------------------------- calling
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(f"{type(self).__name__} defines no forward()", site=user_site())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)


class TensorList(list):
    """The list `parameters` / `buffers` give; calling it returns itself, so torch's
    `Adam(model.parameters(), ...)` works as well as the attribute form (API §6.1)."""

    def __call__(self) -> TensorList:
        return self


def _unique(xs: list[RecurrentTensor]) -> TensorList:
    seen: set[int] = set()
    out = TensorList()
    for x in xs:
        if id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out


def _reindexed(mod: Module, remap: dict[int, Any]) -> Module:
    new = copy.copy(mod)

    def sub(v: Any) -> Any:
        if id(v) in remap:
            return remap[id(v)]
        if isinstance(v, Module):
            return _reindexed(v, remap)
        if isinstance(v, list):
            return [sub(x) for x in v]
        if isinstance(v, tuple):
            return tuple(sub(x) for x in v)
        return v

    new.__dict__ = {k: sub(v) for k, v in vars(mod).items()}
    return new


class Sequential(Module):
    """Modules applied in order."""

    def __init__(
        self, *modules: Module, domain: DomainLike = None, independent_domain: DomainLike = None
    ) -> None:
        super().__init__(domain, independent_domain)
        self.modules = list(modules)

    def forward(self, x: Any) -> Any:
        for m in self.modules:
            x = m(x)
        return x

    def __len__(self) -> int:
        return len(self.modules)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.modules)
