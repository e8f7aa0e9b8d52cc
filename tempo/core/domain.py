"""`Domain`: the ordered set of universe variables over which a tensor has values.
Ordered by universe order (symbol `idx`) so two tensors over the same variables agree on
point layout; a variable's bound defaults to its upper-case twin and may be overridden."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias

from tempo.core.errors import DomainError, user_site

Symbol: TypeAlias = Any  # tempo.core.index_expr.Symbol; imported lazily
DomainLike: TypeAlias = "Domain | Symbol | Iterable[Symbol] | None"


def _ie() -> Any:
    from tempo.core import index_expr

    return index_expr


def _check_var(v: Any) -> None:
    if not (hasattr(v, "name") and hasattr(v, "idx") and hasattr(v, "is_bound")):
        raise DomainError(f"domain members must be variable Symbols, got {v!r}",
                          site=user_site())
    if v.is_bound:
        raise DomainError(f"{v} is a bound symbol; domains hold variables ({v.name.lower()})",
                          site=user_site())


def _symb_eq(a: Any, b: Any) -> Any:
    """The boolean expression `a == b` (not structural equality)."""
    f = getattr(a, "symb_eq", None)
    return f(b) if f is not None else a == b


def _is_default_bound(var: Symbol, bound: Any) -> bool:
    return bool(getattr(bound, "is_bound", False)) and bound.name == var.as_bound().name


class Domain:
    """Immutable ordered set of variables plus per-variable bound overrides.
    Membership and equality go by symbol name (`Symbol.__eq__` builds an expression)."""

    __slots__ = ("_vars", "_bounds")
    _vars: tuple[Symbol, ...]
    _bounds: dict[str, Any]

    def __init__(self, variables: Iterable[Symbol] = (),
                 ubounds: Mapping[Symbol, Any] | Sequence[Any] | None = None) -> None:
        vs = tuple(variables)
        for v in vs:
            _check_var(v)
        names = [v.name for v in vs]
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            raise DomainError(f"variables {dups} repeated in domain {names}", site=user_site())
        bounds: dict[str, Any] = {}
        if ubounds is not None:
            if isinstance(ubounds, Mapping):
                pairs = [(k.name, b) for k, b in ubounds.items()]
            else:
                if len(ubounds) != len(vs):
                    raise DomainError(f"{len(ubounds)} bounds for {len(vs)} variables",
                                      site=user_site())
                pairs = [(v.name, b) for v, b in zip(vs, ubounds)]
            by_name = {v.name: v for v in vs}
            for name, b in pairs:
                if name not in by_name:
                    raise DomainError(f"bound given for {name}, not in domain {names}",
                                      site=user_site())
                if not _is_default_bound(by_name[name], b):
                    bounds[name] = _ie().lift_to_ie(b) if isinstance(b, int) else b
        object.__setattr__(self, "_vars", tuple(sorted(vs, key=lambda v: v.idx)))
        object.__setattr__(self, "_bounds", bounds)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Domain is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Domain, (self._vars, {v: self._bounds[v.name] for v in self._vars
                                      if v.name in self._bounds}))

    # ---- construction -------------------------------------------------------------
    @staticmethod
    def empty() -> Domain:
        return Domain(())

    @staticmethod
    def from_vars(variables: Iterable[Symbol]) -> Domain:
        return Domain(variables)

    @staticmethod
    def from_(d: DomainLike, none_is_empty: bool = False) -> Domain:
        """Domain, single Symbol, or iterable of Symbols. None is the empty domain only with
        `none_is_empty=True`: elsewhere a missing domain is a caller bug."""
        if isinstance(d, Domain):
            return d
        if d is None:
            if none_is_empty:
                return Domain.empty()
            raise DomainError("no domain given (None)", site=user_site())
        if hasattr(d, "is_bound") and hasattr(d, "idx"):
            return Domain((d,))
        try:
            members = tuple(d)
        except TypeError:
            raise DomainError(f"not a domain: {d!r}", site=user_site()) from None
        return Domain(members)

    # ---- basic protocol -----------------------------------------------------------
    @property
    def variables(self) -> tuple[Symbol, ...]:
        return self._vars

    @property
    def ubounds(self) -> tuple[Any, ...]:
        """Upper bound expression of each variable, in domain order."""
        return tuple(self.bound_of(v) for v in self._vars)

    @property
    def parameters(self) -> tuple[Symbol, ...]:
        """The bound symbols the upper bounds use, in universe order."""
        found: dict[str, Any] = {}
        for b in self.ubounds:
            if getattr(b, "is_bound", False):
                found[b.name] = b
            else:
                for s in b.bound_symbols_used():
                    found[s.name] = s
        return tuple(sorted(found.values(), key=lambda s: s.idx))

    def has_default_bounds(self) -> bool:
        """True when every variable `v` runs over `0:V` (no bound is overridden)."""
        return not self._bounds

    def has_default_bound(self, var: Symbol) -> bool:
        """True when `var` runs over `0:V` here (its bound is not overridden)."""
        self.find_variable_index(var)
        return var.name not in self._bounds

    def bound_of(self, var: Symbol) -> Any:
        """The upper bound of `var` here: its override, else `var.as_bound()`."""
        self.find_variable_index(var)
        return self._bounds.get(var.name, var.as_bound())

    def with_bound(self, var: Symbol, bound: Any) -> Domain:
        """This domain with `var`'s upper bound replaced by `bound` (e.g. `T+1`)."""
        self.find_variable_index(var)
        return Domain(self._vars, {**self._override_map(), var: bound})

    def __len__(self) -> int:
        return len(self._vars)

    def __iter__(self) -> Iterator[Symbol]:
        return iter(self._vars)

    def __getitem__(self, i: int) -> Symbol:
        return self._vars[i]

    def is_empty(self) -> bool:
        return not self._vars

    def find_variable_index(self, var: Symbol) -> int:
        name = getattr(var, "name", None)
        for i, v in enumerate(self._vars):
            if v.name == name and not getattr(var, "is_bound", False):
                return i
        raise DomainError(f"{var} is not a dimension of domain {self}", site=user_site())

    def has_dim(self, var: Symbol) -> bool:
        name = getattr(var, "name", None)
        return not getattr(var, "is_bound", True) and any(v.name == name for v in self._vars)

    def __contains__(self, var: object) -> bool:
        return self.has_dim(var)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Domain):
            return NotImplemented
        if self._names() != other._names() or self._bounds.keys() != other._bounds.keys():
            return False
        ie = _ie()
        return all(ie.struct_eq(b, other._bounds[n]) for n, b in self._bounds.items())

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((self._names(), tuple(sorted(self._bounds))))

    def __repr__(self) -> str:
        parts = [v.name if v.name not in self._bounds else f"{v.name}<{self._bounds[v.name]}"
                 for v in self._vars]
        return f"Domain({', '.join(parts)})"

    __str__ = __repr__

    def _names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self._vars)

    def _override_map(self) -> dict[Symbol, Any]:
        return {v: self._bounds[v.name] for v in self._vars if v.name in self._bounds}

    # ---- set algebra (bound overrides: self's win) ----------------------------------
    def union(self, *others: DomainLike) -> Domain:
        vs = {v.name: v for v in self._vars}
        bounds: dict[str, tuple[Symbol, Any]] = {}
        for d in reversed([self, *(Domain.from_(o, none_is_empty=True) for o in others)]):
            for v in d._vars:
                vs.setdefault(v.name, v)
                if v.name in d._bounds:
                    bounds[v.name] = (v, d._bounds[v.name])
        return Domain(vs.values(), dict(bounds.values()))

    def intersect(self, *others: DomainLike) -> Domain:
        keep = set(self._names())
        for o in others:
            keep &= set(Domain.from_(o, none_is_empty=True)._names())
        return self._restrict(keep)

    def difference(self, *others: DomainLike) -> Domain:
        drop: set[str] = set()
        for o in others:
            drop |= set(Domain.from_(o, none_is_empty=True)._names())
        return self._restrict(set(self._names()) - drop)

    def is_contained_in(self, other: DomainLike) -> bool:
        return set(self._names()) <= set(Domain.from_(other, none_is_empty=True)._names())

    def _restrict(self, names: set[str]) -> Domain:
        vs = [v for v in self._vars if v.name in names]
        return Domain(vs, {v: b for v, b in self._override_map().items() if v.name in names})

    def append_dim(self, var: Symbol, bound: Any = None) -> Domain:
        """Add `var` (placed by universe order) with an optional bound override."""
        _check_var(var)
        if self.has_dim(var):
            raise DomainError(f"{var} is already a dimension of {self}", site=user_site())
        over = self._override_map()
        if bound is not None:
            over[var] = bound
        return Domain((*self._vars, var), over)

    def remove_dim(self, var: Symbol) -> Domain:
        i = self.find_variable_index(var)
        return self._restrict(set(self._names()) - {self._vars[i].name})

    # ---- index expressions over the domain -----------------------------------------
    @property
    def basis_expr(self) -> Any:
        """The identity access `(v0, v1, ...)`."""
        return _ie().IndexSequence(tuple(self._vars))

    @property
    def lb_expr(self) -> Any:
        """The origin: every variable at its lower bound 0."""
        ie = _ie()
        return ie.IndexSequence(tuple(ie.ConstInt(0) for _ in self._vars))

    @property
    def ub_expr(self) -> Any:
        """The last point: every variable at its upper bound minus one."""
        return _ie().IndexSequence(tuple(b - 1 for b in self.ubounds))

    @property
    def lex_prev_expr(self) -> Any:
        """Row-major predecessor: decrement the last variable, borrowing from the left when
        it is 0 (it wraps to its bound-1). The origin wraps to the last point."""
        return self._lex_step(prev=True)

    @property
    def lex_next_expr(self) -> Any:
        """Row-major successor: increment the last variable, carrying to the left when it
        is at bound-1 (it wraps to 0). The last point wraps to the origin."""
        return self._lex_step(prev=False)

    def _lex_step(self, prev: bool) -> Any:
        ie = _ie()
        vs, bs = self._vars, self.ubounds
        n = len(vs)
        edge = [_symb_eq(v, 0) if prev else _symb_eq(v, b - 1) for v, b in zip(vs, bs)]
        members = []
        for k in range(n):
            inner: Any = ie.ConstBool(True)
            for j in range(k + 1, n):
                inner = inner & edge[j]
            wrapped = bs[k] - 1 if prev else ie.ConstInt(0)
            stepped = vs[k] - 1 if prev else vs[k] + 1
            branches = [(inner & edge[k], wrapped), (inner, stepped)]
            if k < n - 1:
                branches.append((ie.ConstBool(True), vs[k]))
            else:
                branches[-1] = (ie.ConstBool(True), stepped)
            members.append(ie.piecewise(branches))
        return ie.IndexSequence(tuple(members))

    @property
    def linearized_count_expr(self) -> Any:
        """Row-major linear index of the current point: `((v0*B1 + v1)*B2 + v2)...`."""
        ie = _ie()
        if not self._vars:
            return ie.ConstInt(0)
        acc: Any = self._vars[0]
        for v, b in zip(self._vars[1:], self.ubounds[1:]):
            acc = acc * b + v
        return acc

    def linearized_size_expr(self) -> Any:
        """Number of points: the product of the upper bounds (1 for the empty domain)."""
        ie = _ie()
        acc: Any = ie.ConstInt(1)
        for b in self.ubounds:
            acc = acc * b
        return acc
