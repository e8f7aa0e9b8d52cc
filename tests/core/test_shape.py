"""Shape (API §5 with §7 fix 6): static and symbolic dims, algebraic equality,
derived shapes, and broadcasting checked against `numpy.broadcast_shapes`."""

from __future__ import annotations

import itertools
import pickle
import random

import numpy as np
import pytest

from tempo.core import index_expr as ie
from tempo.core.errors import ShapeError
from tempo.core.shape import Shape, StaticShape, normalize_dim
from tempo.core.utils import make_symbols

(b, B), (t, T) = make_symbols(["b", "t"])


def test_from_and_static() -> None:
    assert Shape.from_(None) == () and Shape.from_(None).is_scalar()
    assert isinstance(Shape.from_((2, 3)), StaticShape)
    assert isinstance(Shape((np.int64(2),)), StaticShape)
    assert Shape.from_(5) == (5,)
    assert Shape.from_([2, 3]) == (2, 3) == Shape.from_((2, 3))
    dyn = Shape.from_((T, 3))
    assert not isinstance(dyn, StaticShape) and dyn.is_dynamic() and not dyn.is_static()
    assert Shape.from_(T) == Shape((T,))
    assert Shape((ie.ConstInt(4), 2)) == (4, 2) and Shape((ie.ConstInt(4),)).is_static()
    for bad in [(-1,), (2.5,), ("a",), "ab"]:
        with pytest.raises(ShapeError):
            Shape.from_(bad)  # type: ignore[arg-type]


def test_indexing_fix_6_and_slicing() -> None:
    s = Shape((2, T, 5))
    assert s[0] == 2 and s[-1] == 5 and isinstance(s[0], int)
    assert s[1].struct_eq(T)
    assert isinstance(s[1:], Shape) and s[1:] == (T, 5) and s[:0] == ()
    assert s.at(2) == 5 and s.int_at(0) == 2
    with pytest.raises(ShapeError):
        s.int_at(1)
    with pytest.raises(ShapeError):
        s[3]
    assert len(s) == 3 and list(Shape((2, 3))) == [2, 3]


def test_equality_is_algebraic() -> None:
    assert Shape((T - t + t, 2)) == Shape((T, 2))
    assert Shape((T * 2 // 2,)) == (T,)
    assert Shape((T,)) != Shape((T + 1,))
    assert Shape((2, 3)) != (3, 2) and Shape((2,)) != (2, 1)
    assert hash(Shape((T - t + t, 2))) == hash(Shape((T, 2)))  # consistent with ==
    assert Shape((2, 3)) != "23"


def test_prod_eval_resolve_vars() -> None:
    assert Shape((2, 3, 4)).prod() == 24 and Shape(()).prod() == 1
    s = Shape((2, T, t + 1))
    assert s.prod().evaluate({T: 5, t: 2}) == 30
    assert s.evaluate({T: 5, t: 2}) == (2, 5, 3)
    with pytest.raises(KeyError):
        s.evaluate({T: 5})
    partial = s.try_resolve({T: 5})
    assert partial == (2, 5, t + 1) and partial.is_dynamic()
    full = s.try_resolve({T: 5, t: 0})
    assert isinstance(full, StaticShape) and full == (2, 5, 1)
    assert s.vars_used() == {t} and s.bound_symbols_used() == {T}
    with pytest.raises(ShapeError):
        s.as_static()
    assert Shape((2, 3)).as_static() == (2, 3)
    assert Shape.scalar() == ()


def test_derived_shapes() -> None:
    s = Shape((2, 3, 4))
    assert s.prepend_dim(T) == (T, 2, 3, 4)
    assert s.drop_dim(1) == (2, 4) and s.drop_dim(-1) == (2, 3)
    assert s.insert_dim(0, 7) == (7, 2, 3, 4) and s.insert_dim(-1, 7) == (2, 3, 4, 7)
    assert s.insert_dim(3, 7) == (2, 3, 4, 7)
    assert s.permute((2, 0, 1)) == (4, 2, 3) and s.permute((-1, 0, 1)) == (4, 2, 3)
    assert s + (5,) == (2, 3, 4, 5) and (1,) + s == (1, 2, 3, 4)
    with pytest.raises(ShapeError):
        s.permute((0, 0, 1))
    with pytest.raises(ShapeError):
        s.drop_dim(3)


def test_normalize_dim() -> None:
    assert normalize_dim(-1, 3) == 2 and normalize_dim(0, 3) == 0 and normalize_dim(-3, 3) == 0
    for dim, nd in [(3, 3), (-4, 3), (0, 0)]:
        with pytest.raises(ShapeError, match="out of range"):
            normalize_dim(dim, nd)


def _random_broadcastable(rng: random.Random) -> list[tuple[int, ...]]:
    nd = rng.randint(0, 4)
    base = [rng.choice([1, 2, 3, 5]) for _ in range(nd)]
    shapes = []
    for _ in range(rng.randint(1, 3)):
        keep = rng.randint(0, nd)
        shapes.append(tuple(d if rng.random() < 0.6 else 1 for d in base[nd - keep:]))
    return shapes


def test_broadcast_matches_numpy() -> None:
    rng = random.Random(0)
    for _ in range(300):
        shapes = _random_broadcastable(rng)
        assert Shape.broadcast(*shapes) == np.broadcast_shapes(*shapes), shapes
    pairs = itertools.product(itertools.product([1, 2, 3], repeat=2), [(1,), (2,), (3,)])
    for a, bb in pairs:
        try:
            want = np.broadcast_shapes(a, bb)
        except ValueError:
            with pytest.raises(ShapeError):
                Shape.broadcast(a, bb)
        else:
            assert Shape.broadcast(a, bb) == want


def test_broadcast_symbolic() -> None:
    assert Shape.broadcast((T, 1), (1, 4)) == (T, 4)
    assert Shape.broadcast((T, 3), (T - t + t, 3)) == (T, 3)
    assert Shape.broadcast((1,), (T + 1, 2, 1)) == (T + 1, 2, 1)
    assert Shape.broadcast() == ()
    with pytest.raises(ShapeError) as info:
        Shape.broadcast((T, 3), (T + 1, 3))
    msg = str(info.value)
    assert "(T, 3)" in msg and "(T+1, 3)" in msg.replace(" + ", "+")
    with pytest.raises(ShapeError):
        Shape.broadcast((T,), (3,))


def test_immutable_and_picklable() -> None:
    s = Shape((2, T))
    with pytest.raises(AttributeError):
        s._dims = ()  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(s)) == s
