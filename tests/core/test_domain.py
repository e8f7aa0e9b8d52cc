"""Domain API (API §3.1): set algebra, ordering by universe index, bound overrides, and
the lex_prev/lex_next/linearized_count expressions against brute-force enumeration."""

from __future__ import annotations

import itertools
import pickle

import pytest

from tempo.core import index_expr as ie
from tempo.core.domain import Domain
from tempo.core.errors import DomainError, IndexExprError
from tempo.core.utils import make_symbols

(b, B), (i, I), (t, T) = make_symbols(["b", "i", "t"])


def _points(bounds: tuple[int, ...]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(n) for n in bounds)))  # row-major order


def _env(dom: Domain, point: tuple[int, ...], bounds: tuple[int, ...]) -> dict:
    env = {v: p for v, p in zip(dom.variables, point)}
    env.update({v.as_bound(): n for v, n in zip(dom.variables, bounds)})
    return env


@pytest.mark.parametrize("bounds", [(4,), (2, 3), (3, 1, 2), (2, 2, 3)])
def test_lex_prev_next_and_linear_count_brute_force(bounds: tuple[int, ...]) -> None:
    dom = Domain((b, i, t)[: len(bounds)])
    pts = _points(bounds)
    for k, p in enumerate(pts):
        env = _env(dom, p, bounds)
        assert dom.linearized_count_expr.evaluate(env) == k
        assert tuple(dom.lex_next_expr.evaluate(env)) == pts[(k + 1) % len(pts)]
        assert tuple(dom.lex_prev_expr.evaluate(env)) == pts[(k - 1) % len(pts)]
    assert dom.linearized_size_expr().evaluate(_env(dom, pts[0], bounds)) == len(pts)


def test_linearized_count_example() -> None:
    dom = Domain((b, i, t))
    env = {b: 2, i: 3, t: 5, B: 5, I: 6, T: 7}
    assert dom.linearized_count_expr.evaluate(env) == 110


def test_lex_exprs_use_piecewise_and_respect_bound_overrides() -> None:
    dom = Domain((b, t), {t: T + 1})
    assert any(isinstance(m, ie.Piecewise) for m in dom.lex_prev_expr.members)
    bounds = (2, 4)  # t runs to T+1 = 4 when T = 3
    pts = _points(bounds)
    for k, p in enumerate(pts):
        env = {b: p[0], t: p[1], B: 2, T: 3}
        assert tuple(dom.lex_next_expr.evaluate(env)) == pts[(k + 1) % len(pts)]
        assert dom.linearized_count_expr.evaluate(env) == k


def test_ordering_by_universe_index_and_basics() -> None:
    dom = Domain((t, b))
    assert dom.variables == (b, t) and len(dom) == 2 and list(dom) == [b, t]
    assert dom == Domain.from_vars([b, t]) and hash(dom) == hash(Domain((b, t)))
    assert [u.name for u in dom.ubounds] == ["B", "T"]
    assert dom.parameters == (B, T)
    assert dom.find_variable_index(t) == 1
    assert t in dom and i not in dom and dom.has_dim(b) and not dom.has_dim(I)
    assert ie.Symbol("t", idx=4) in dom  # fresh equal-named symbol
    assert dom.basis_expr.struct_eq(ie.IndexSequence((b, t)))
    assert tuple(dom.lb_expr.evaluate({})) == (0, 0)
    with pytest.raises(DomainError):
        dom.find_variable_index(i)


def test_from_and_empty() -> None:
    assert Domain.from_(t) == Domain((t,))
    assert Domain.from_([t, b]) == Domain((b, t))
    d = Domain((b,))
    assert Domain.from_(d) is d
    assert Domain.from_(None, none_is_empty=True) == Domain.empty()
    assert len(Domain.empty()) == 0 and Domain.empty().is_empty()
    with pytest.raises(DomainError):
        Domain.from_(None)
    with pytest.raises(DomainError):
        Domain((T,))  # bound symbols are not dimensions
    with pytest.raises(DomainError):
        Domain((t, ie.Symbol("t", idx=4)))


def test_set_algebra() -> None:
    bt, it = Domain((b, t)), Domain((i, t))
    assert bt.union(it) == Domain((b, i, t))
    assert bt.union(it).variables == (b, i, t)
    assert bt.intersect(it) == Domain((t,))
    assert bt.difference(it) == Domain((b,))
    assert Domain((t,)).is_contained_in(bt) and not bt.is_contained_in(it)
    assert Domain.empty().is_contained_in(bt)
    assert bt.union(None) == bt and bt.union(i) == Domain((b, i, t))


def test_append_remove_dim() -> None:
    d = Domain((t,)).append_dim(b)
    assert d.variables == (b, t)
    d2 = d.append_dim(i, T // 2)
    assert d2.bound_of(i).struct_eq(T // 2) and d2.bound_of(b).struct_eq(B)
    assert d2.remove_dim(i) == d
    with pytest.raises(DomainError):
        d.append_dim(t)
    with pytest.raises(DomainError):
        d.remove_dim(i)


def test_bound_overrides() -> None:
    plain = Domain((t,))
    rec = plain.with_bound(t, T + 1)
    assert rec.bound_of(t).struct_eq(T + 1) and plain.bound_of(t).struct_eq(T)
    assert rec != plain
    assert rec.parameters == (T,)
    assert Domain((t,), {t: T}) == plain  # the default bound is not an override
    assert Domain((b, t), [B, T + 1]).bound_of(t).struct_eq(T + 1)
    assert rec.union(Domain((b,))).bound_of(t).struct_eq(T + 1)
    assert rec.difference(b).bound_of(t).struct_eq(T + 1)
    with pytest.raises(DomainError):
        Domain((t,), {b: B})


def test_immutable_and_picklable() -> None:
    d = Domain((b, t), {t: T + 1})
    with pytest.raises(AttributeError):
        d._vars = ()  # type: ignore[misc]
    d2 = pickle.loads(pickle.dumps(d))
    assert d2 == d and d2.bound_of(t).struct_eq(T + 1)


def test_make_symbols() -> None:
    syms = make_symbols(["x", "Y"], start_idx=3)
    (x, X), (y, Y) = syms
    assert (x.name, x.idx, x.is_bound) == ("x", 6, False)
    assert (X.name, X.idx, X.is_bound) == ("X", 7, True)
    assert (y.name, Y.name, y.idx) == ("y", "Y", 8)
    assert x.as_bound().name == "X" and Y.as_var().name == "y"
    with pytest.raises(IndexExprError):
        make_symbols(["a", "A"])
