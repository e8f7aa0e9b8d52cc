"""`TempoContext`: the universe of symbolic dimensions, the graph being recorded, and
`compile()` which turns that graph into an executor."""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tempo.api import dim_names as user_names
from tempo.api import error_names
from tempo.core import errors, naming
from tempo.core.configs import ExecutionConfig
from tempo.core.domain import Domain, DomainLike
from tempo.core.dtype import dtypes
from tempo.core.errors import BoundError, IndexExprError, TempoError, user_site
from tempo.core.index_expr import BooleanIndexValue, ConstBool, Symbol, lift_to_bool_ie
from tempo.core.sdg import SDG
from tempo.core.utils import make_symbols

_int_before = dtypes.default_int
DEFAULT_EXEC_CFG = ExecutionConfig.default()
dtypes.default_int = _int_before  # importing must not switch the int dtype of other configs

_state = threading.local()
_ids = itertools.count(1)  # TempoContext ids: the `owner` of the symbols each one makes
errors.NAMER = error_names.rename  # errors call unnamed dims by the user's bindings


def _stack() -> list[TempoContext]:
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


def get_active_ctx_manager() -> TempoContext:
    """The innermost active context (the one ops are recorded into)."""
    st = _stack()
    if not st:
        raise TempoError("no active TempoContext: create one before building tensors",
                         site=user_site())
    return st[-1]


class TempoContext:
    """A program under construction. `TempoContext(cfg, num_dims=n)` creates symbols
    d0..d{n-1} with bounds D0..D{n-1}, or the names in `dim_names` ("b", "t" -> b/B, t/T),
    which errors and schedules then print; construction already makes it active."""

    def __init__(
        self, execution_config: ExecutionConfig = DEFAULT_EXEC_CFG, num_dims: int | None = None,
        dim_names: Sequence[str] | None = None,
    ) -> None:
        self.execution_config = execution_config
        self.uid = next(_ids)
        pairs = make_symbols(_dim_names(num_dims, dim_names), owner=self.uid)
        self._vars: tuple[Symbol, ...] = tuple(v for v, _ in pairs)
        self._bounds: tuple[Symbol, ...] = tuple(b for _, b in pairs)
        self._extra: list[tuple[Symbol, Symbol]] = []
        self._named = dim_names is not None  # the dimensions' names are fixed
        self._unnamed = dim_names is None and bool(self._vars)  # some are still `d<k>`
        self._exit_names: dict[int, str] = {}  # symbol id -> the user's name (error_names)
        self._exit_seen: set[Any] = set()  # code objects whose with-blocks were looked at
        self.sdg = SDG(Domain(self._vars))
        self._conditions: list[BooleanIndexValue] = []
        self._tags: list[str] = []
        self._domain_ctx: list[Domain] = []
        self.last_barrier: int | None = None  # op id of the last RT.barrier recorded
        _stack().append(self)
        self._entered = 0

    @property
    def execution_config(self) -> ExecutionConfig:
        return self._cfg

    @execution_config.setter
    def execution_config(self, cfg: ExecutionConfig) -> None:
        """Construction activates the context (API §1.1), and programs replace the config
        after it (`ctx.execution_config = cfg`): either way the config's backend sets
        `dtypes.default_int` (§4.2), as `with ctx:` does."""
        self._cfg = cfg
        cfg.apply_default_int()

    # ---------------------------------------------------------------- universe
    @property
    def variables(self) -> tuple[Symbol, ...]:
        self._take_names("variables")
        return self._vars

    @property
    def upper_bounds(self) -> tuple[Symbol, ...]:
        self._take_names("upper_bounds")
        return self._bounds

    @property
    def variables_and_bounds(self) -> tuple[tuple[Symbol, Symbol], ...]:
        self._take_names("variables_and_bounds")
        return tuple(zip(self._vars, self._bounds))

    @property
    def universe(self) -> Domain:
        self._take_names("universe")
        return self.sdg.universe

    def _take_names(self, member: str) -> None:
        """Before the symbols are first handed out: name the dimensions as the user's
        statement taking them does (`(b, B), (t, T) = ctx.variables_and_bounds` names
        d0/D0 `b`/`B`), so errors and schedules use the user's names (tempo/api/dim_names)."""
        if self._named:
            return
        self._named = True
        if self._extra or self.sdg.ops or not self._vars:
            return
        frame = user_names.caller_frame()
        pairs = None if frame is None else user_names.bound_names(frame, member,
                                                                  len(self._vars))
        names = None if pairs is None else user_names.dim_names(pairs,
                                                                [v.name for v in self._vars])
        if names is None:
            return
        try:
            made = make_symbols(names, owner=self.uid)
        except IndexExprError:
            return  # (a reserved word): the defaults stay
        self._vars = tuple(v for v, _ in made)
        self._bounds = tuple(b for _, b in made)
        self._unnamed = any(error_names.DEFAULT.fullmatch(v.name) for v in self._vars)
        self.sdg = SDG(Domain(self._vars))

    def new_perm_var(self, bound: int) -> tuple[Symbol, Symbol]:
        """A new dimension appended to the universe with its bound fixed to `bound`."""
        var, ub = self.sdg.new_dim("d", bound)
        var = Symbol(var.name, False, var.idx, self.uid)  # tagged as this context's (knows)
        ub = var.as_bound()
        self._extra.append((var, ub))
        self._unnamed = True
        return var, ub

    def knows(self, sym: Symbol) -> bool:
        """True for this context's own dimensions and bounds. Symbols compare by name, so a
        symbol another context made (both unnamed contexts have a `d0`) is told apart by
        its owner id; a symbol made by name elsewhere (owner 0) goes by its name."""
        if self.owns_not(sym):
            return False
        var = sym.as_var() if sym.is_bound else sym
        return self.universe.has_dim(var)

    def owns_not(self, sym: Symbol) -> bool:
        """True when another TempoContext made `sym`."""
        return sym.owner not in (0, self.uid)

    # ---------------------------------------------------------------- activation
    def __enter__(self) -> TempoContext:
        _stack().append(self)
        self._entered += 1
        self.execution_config.apply_default_int()
        return self

    def __exit__(self, *exc: Any) -> None:
        """Pop this context's innermost activation (an enclosing one stays active). A
        context whose dims keep default names notes the names the block's frame binds them
        to, for errors read after that frame is gone (tempo/api/error_names)."""
        st = _stack()
        for k in range(len(st) - 1, -1, -1):
            if st[k] is self:
                del st[k]
                break
        self._entered -= 1
        if self._unnamed:
            try:
                error_names.remember(self, sys._getframe(1))
            except Exception:  # noqa: BLE001 - naming is a courtesy, never an error
                pass

    # ---------------------------------------------------------------- scoped state
    @contextlib.contextmanager
    def when(self, cond: BooleanIndexValue | bool) -> Iterator[None]:
        """Every definition inside is also guarded by `cond`."""
        if hasattr(cond, "tensor_id"):  # a data-dependent condition: not what when() takes
            tensor: Any = cond
            raise IndexExprError(
                f"when() takes a boolean index expression of the dimensions (e.g. `t < 5`), "
                f"not the tensor {naming.op_label(tensor.op, tensor.sdg.names)}: to choose "
                "values by data, use RecurrentTensor.where(cond, a, b)", site=user_site())
        self._conditions.append(lift_to_bool_ie(cond))
        try:
            yield
        finally:
            self._conditions.pop()

    @property
    def current_condition(self) -> BooleanIndexValue:
        out: BooleanIndexValue = ConstBool(True)
        for c in self._conditions:
            out = out & c
        return out

    @contextlib.contextmanager
    def tag_region(self, tag: str) -> Iterator[None]:
        self._tags.append(tag)
        try:
            yield
        finally:
            self._tags.pop()

    tag_group = tag_region

    @contextlib.contextmanager
    def forbid_dedup(self) -> Iterator[None]:
        with self.tag_region("__NO_DEDUP__"):
            yield

    @property
    def current_tags(self) -> frozenset[str]:
        return frozenset(self._tags)

    @contextlib.contextmanager
    def domain_ctx(self, domain: DomainLike) -> Iterator[None]:
        self._domain_ctx.append(Domain.from_(domain, none_is_empty=True))
        try:
            yield
        finally:
            self._domain_ctx.pop()

    @property
    def default_domain(self) -> Domain:
        return self._domain_ctx[-1] if self._domain_ctx else Domain.empty()

    # ---------------------------------------------------------------- compile
    def compile(
        self, bounds: Mapping[Symbol, Any] | None = None, use_active_config: bool = False
    ) -> Any:
        """Schedule and generate code for the recorded program; returns an Executor.
        A bound may be `(max, done)`: a bool tensor over that dimension ends it after the
        first point where all of `done` is true (API §7 item 10)."""
        from tempo.api.compile_driver import compile_sdg

        cfg = self.execution_config
        if use_active_config and _stack():
            cfg = _stack()[-1].execution_config
        for k in bounds or {}:
            if isinstance(k, Symbol) and k.is_bound and not self.knows(k):
                own = ", ".join(str(v.as_bound()) for v in self.universe.variables) or "none"
                raise BoundError(f"compile got a value for {k}, which is not a bound of this "
                                 f"TempoContext (its bounds: {own})", site=user_site())
        from tempo.api.autodiff.backward import check_lowering_config

        check_lowering_config(self, cfg)  # backward() lowered with the context's config
        exe = compile_sdg(self.sdg, cfg, bounds, user_site())
        exe.recorded = self.sdg  # names tensors the compiler removed, when the user reads one
        return exe

    def get_isl_ctx(self) -> Any:
        import islpy as isl

        return isl.DEFAULT_CONTEXT


def _dim_names(num_dims: int | None, dim_names: Sequence[str] | None) -> list[str]:
    """`d0..d{n-1}`, or the user's names (their count must agree with `num_dims`)."""
    if dim_names is None:
        return [f"d{i}" for i in range(num_dims or 0)]
    if isinstance(dim_names, str):
        dim_names = dim_names.replace(",", " ").split()
    names = list(dim_names)
    if num_dims is not None and num_dims != len(names):
        raise IndexExprError(f"TempoContext: num_dims={num_dims} but dim_names has "
                             f"{len(names)} names {names}", site=user_site())
    return names
