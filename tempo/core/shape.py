"""Spatial shapes: a tuple of dims, each an int or a symbolic `IntIndexValue` (e.g. `T-t`).
Symbolic dims compare algebraically (`logical_eq`), never with `==` (which builds `Equal`)."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import reduce
from typing import Any, TypeAlias

import numpy as np

from tempo.core.errors import ShapeError, user_site

Dim: TypeAlias = Any  # int | IntIndexValue; index_expr is imported lazily
ShapeLike: TypeAlias = "Shape | Sequence[Dim] | int | None"


def _is_int(d: Any) -> bool:
    return isinstance(d, int | np.integer) and not isinstance(d, bool | np.bool_)


def _norm_dim(d: Any) -> Dim:
    """ints (numpy ints too) become int; constant expressions fold to int."""
    if _is_int(d):
        if d < 0:
            raise ShapeError(f"negative dimension {d}", site=user_site())
        return int(d)
    if isinstance(d, bool | np.bool_ | float | str) or not hasattr(d, "evaluate"):
        raise ShapeError(f"shape dims must be ints or index expressions, got {d!r}",
                         site=user_site())
    if not d.vars_used() and not _bound_syms(d):
        val = d.try_eval()
        if _is_int(val):
            return _norm_dim(val)
    return d


def _bound_syms(d: Any) -> set[Any]:
    f = getattr(d, "bound_symbols_used", None)
    return set(f()) if f is not None else set()


def dims_equal(a: Dim, b: Dim) -> bool:
    """Algebraic equality of two dims (ints, or expressions via `logical_eq`)."""
    if _is_int(a) and _is_int(b):
        return int(a) == int(b)
    from tempo.core import index_expr as ie

    return bool(ie.logical_eq(ie.lift_to_ie(a), ie.lift_to_ie(b)))


def normalize_dim(dim: int, ndim: int) -> int:
    """Map a possibly negative `dim` into `[0, ndim)`, as numpy/torch do."""
    if not _is_int(dim):
        raise ShapeError(f"dim must be an int, got {dim!r}", site=user_site())
    if not -ndim <= dim < ndim:
        valid = f"[{-ndim}, {ndim - 1}]" if ndim else "none (the shape is scalar)"
        raise ShapeError(f"dim {dim} out of range for {ndim} dims (valid: {valid})",
                         site=user_site())
    return int(dim) % ndim


class Shape:
    """Immutable spatial shape. `Shape((2, 3))` is a `StaticShape`; `shape[i]` is the i-th
    dim (API §7 fix 6) and slicing returns a Shape."""

    __slots__ = ("_dims",)
    _dims: tuple[Dim, ...]

    def __new__(cls, dims: Iterable[Dim] = ()) -> Shape:
        dims_t = tuple(_norm_dim(d) for d in dims)
        target = StaticShape if all(_is_int(d) for d in dims_t) else cls
        if cls is StaticShape and target is not StaticShape:
            raise ShapeError(f"StaticShape needs int dims, got {dims_t}", site=user_site())
        obj = object.__new__(target)
        object.__setattr__(obj, "_dims", dims_t)
        return obj

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Shape is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Shape, (self._dims,))

    # ---- construction -------------------------------------------------------------
    @staticmethod
    def from_(x: ShapeLike) -> Shape:
        """None → scalar; int or expression → 1-d; sequence → Shape (StaticShape if ints)."""
        if isinstance(x, Shape):
            return x
        if x is None:
            return Shape(())
        if _is_int(x) or (hasattr(x, "evaluate") and not hasattr(x, "__iter__")):
            return Shape((x,))
        if isinstance(x, str) or not isinstance(x, Iterable):  # e.g. a bool
            raise ShapeError(f"not a shape: {x!r}", site=user_site())
        try:
            return Shape(tuple(x))
        except TypeError:
            raise ShapeError(f"not a shape: {x!r}", site=user_site()) from None

    @staticmethod
    def scalar() -> Shape:
        return Shape(())

    # ---- tuple protocol -----------------------------------------------------------
    @property
    def dims(self) -> tuple[Dim, ...]:
        return self._dims

    def __len__(self) -> int:
        return len(self._dims)

    def __iter__(self) -> Iterator[Dim]:
        return iter(self._dims)

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return Shape(self._dims[i])
        return self._dims[normalize_dim(i, len(self._dims))]

    def at(self, i: int) -> Dim:
        return self[i]

    def int_at(self, i: int) -> int:
        d = self[i]
        if not _is_int(d):
            raise ShapeError(f"dim {i} of {self} is symbolic ({d})", site=user_site())
        return int(d)

    def __add__(self, other: ShapeLike) -> Shape:
        return Shape(self._dims + Shape.from_(other)._dims)

    def __radd__(self, other: ShapeLike) -> Shape:
        return Shape(Shape.from_(other)._dims + self._dims)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Shape | tuple | list):
            return NotImplemented
        other_s = Shape.from_(other)
        return len(self) == len(other_s) and all(
            dims_equal(a, b) for a, b in zip(self._dims, other_s._dims)
        )

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        # Consistent with algebraic ==: symbolic dims all hash alike.
        return hash(tuple(d if _is_int(d) else "?" for d in self._dims))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(str(d) for d in self._dims)})"

    def __str__(self) -> str:
        inner = ", ".join(str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"

    # ---- queries ------------------------------------------------------------------
    def is_scalar(self) -> bool:
        return len(self._dims) == 0

    def is_static(self) -> bool:
        return all(_is_int(d) for d in self._dims)

    def is_dynamic(self) -> bool:
        return not self.is_static()

    def as_static(self) -> StaticShape:
        if not isinstance(self, StaticShape):  # Shape(...) of int dims is always one
            raise ShapeError(f"shape {self} is symbolic", site=user_site())
        return self

    def prod(self) -> Dim:
        """Number of elements (an expression if any dim is symbolic)."""
        return reduce(operator.mul, self._dims, 1)

    def vars_used(self) -> set[Any]:
        out: set[Any] = set()
        for d in self._dims:
            if not _is_int(d):
                out |= set(d.vars_used())
        return out

    def bound_symbols_used(self) -> set[Any]:
        out: set[Any] = set()
        for d in self._dims:
            if not _is_int(d):
                out |= _bound_syms(d)
        return out

    def evaluate(self, values: Mapping[Any, int]) -> tuple[int, ...]:
        """Every dim as an int; a missing symbol raises KeyError."""
        return tuple(int(d) if _is_int(d) else int(d.evaluate(values)) for d in self._dims)

    def try_resolve(self, values: Mapping[Any, int]) -> Shape:
        """Substitute the known symbols; dims that still need unknown ones stay symbolic."""
        out = []
        for d in self._dims:
            if _is_int(d):
                out.append(d)
                continue
            partial = getattr(d, "partial_eval", None)
            if partial is not None:
                out.append(partial(values))
                continue
            try:
                out.append(int(d.evaluate(values)))
            except KeyError:
                out.append(d)
        return Shape(out)

    # ---- derived shapes -----------------------------------------------------------
    def prepend_dim(self, d: Dim) -> Shape:
        return Shape((d, *self._dims))

    def append_dim(self, d: Dim) -> Shape:
        return Shape((*self._dims, d))

    def drop_dim(self, i: int) -> Shape:
        i = normalize_dim(i, len(self._dims))
        return Shape(self._dims[:i] + self._dims[i + 1:])

    def insert_dim(self, i: int, d: Dim) -> Shape:
        """Insert `d` so it ends up at position `i` (negative counts from the new end)."""
        i = normalize_dim(i, len(self._dims) + 1)
        return Shape(self._dims[:i] + (d,) + self._dims[i:])

    def resize_dim(self, i: int, d: Dim) -> Shape:
        i = normalize_dim(i, len(self._dims))
        return Shape(self._dims[:i] + (d,) + self._dims[i + 1:])

    def permute(self, perm: Sequence[int]) -> Shape:
        n = len(self._dims)
        norm = [normalize_dim(p, n) for p in perm]
        if sorted(norm) != list(range(n)):
            raise ShapeError(f"{tuple(perm)} is not a permutation of the dims of {self}",
                             site=user_site())
        return Shape(self._dims[p] for p in norm)

    @staticmethod
    def normalize_dim(dim: int, ndim: int) -> int:
        return normalize_dim(dim, ndim)

    @staticmethod
    def broadcast(*shapes: ShapeLike) -> Shape:
        """numpy broadcasting, right-aligned; a symbolic dim matches a logically equal dim
        or 1. Raises ShapeError naming both shapes."""
        result = Shape(())
        for s in shapes:
            result = _broadcast2(result, Shape.from_(s))
        return result


class StaticShape(Shape):
    """A Shape whose dims are all ints (what `Shape(...)` returns for int dims)."""

    __slots__ = ()

    def __new__(cls, dims: Iterable[int] = ()) -> StaticShape:
        out = super().__new__(cls, dims)
        assert isinstance(out, StaticShape)  # Shape.__new__ rejects non-int dims for it
        return out

    @property
    def dims(self) -> tuple[int, ...]:
        return self._dims

    def prod(self) -> int:
        return int(np.prod(self._dims, dtype=np.int64)) if self._dims else 1


def _broadcast2(a: Shape, b: Shape) -> Shape:
    n = max(len(a), len(b))
    da = (1,) * (n - len(a)) + a.dims
    db = (1,) * (n - len(b)) + b.dims
    out: list[Dim] = []
    for x, y in zip(da, db):
        if _is_int(x) and x == 1:
            out.append(y)
        elif _is_int(y) and y == 1:
            out.append(x)
        elif dims_equal(x, y):
            out.append(x if _is_int(x) or not _is_int(y) else y)
        else:
            raise ShapeError(f"shapes {a} and {b} do not broadcast: dim {x} vs {y}",
                             site=user_site())
    return Shape(out)
