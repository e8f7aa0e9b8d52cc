"""Tests of index expressions: construction folding, evaluation, generated Python, isl strings
and the isl bridge, logical equality, symbol identity, slices, sequences and lifting."""

from __future__ import annotations

import itertools
import random

import islpy as isl
import pytest

import tempo.core.index_expr as ie
from tempo.core.errors import IndexExprError

t, T = ie.Symbol("t", idx=0), ie.Symbol("T", is_bound=True, idx=1)
b, B = ie.Symbol("b", idx=2), ie.Symbol("B", is_bound=True, idx=3)
GRID = [{t: tv, T: Tv} for tv in range(-7, 8) for Tv in (-5, -1, 0, 1, 3, 8)]


def _int_exprs() -> list[ie.IntIndexValue]:
    """Quasi-affine and non-affine samples covering every integer node kind."""
    return [
        t - 1,
        t + 1 - 1 + T,
        ie.max(0, t - 3 + 1),
        ie.min(t + 3, T, 5),
        t // 4,
        (t + T) // -3,
        t % 3,
        (t - T) % -4,
        -(t - 2 * T),
        3 * t - T // 2,
        ie.piecewise([(t < 0, -t), (t.symb_eq(3), T), (True, t % 5)]),
        ie.max(t, T) - ie.min(t // 2, T % 3),
        ie.piecewise([(t >= T, ie.max(t, 1)), (True, T)]) + 1,
    ]


NON_AFFINE: list[ie.IntIndexValue] = [t * T, t**2 + 1, ie.ceil(t / 2), ie.floor((t + 1) / 3)]


# --------------------------------------------------------------------------- construction


def test_construction_simplifications() -> None:
    assert (t + 0).struct_eq(t) and (t * 1).struct_eq(t) and (t - 0).struct_eq(t)
    assert (t * 0).struct_eq(ie.ConstInt(0)) and (0 * t).struct_eq(0)
    assert (ie.ConstInt(2) + 3).struct_eq(5)
    assert (t - t).struct_eq(0)
    assert ((t + 3) - 3).struct_eq(t) and (t - 1 + 1).struct_eq(t)
    assert ((t + 3) - (t + 1)).struct_eq(2)
    assert (t // 1).struct_eq(t) and (t // t).struct_eq(1) and (t % 1).struct_eq(0)
    assert t.__neg__().__neg__().struct_eq(t) and (0 - (-t)).struct_eq(t)
    assert (1 + t).struct_eq(t + 1)
    assert isinstance(t // 2, ie.FloorDivision) and isinstance(t % 2, ie.Modulos)
    assert isinstance(t / 2, ie.TrueDivision) and isinstance(t**2, ie.Pow)
    assert isinstance(t + T, ie.Add) and isinstance(t - T, ie.Sub) and isinstance(-t, ie.Neg)
    with pytest.raises(IndexExprError):
        _ = t // 0
    with pytest.raises(IndexExprError):
        _ = t % 0
    with pytest.raises(ZeroDivisionError):
        _ = (t + 1) // 0


def test_boolean_simplifications() -> None:
    c = t < 5
    assert (ie.ConstBool(True) & c).struct_eq(c) and (c & True).struct_eq(c)
    assert (ie.ConstBool(False) & c).struct_eq(False)
    assert (c | ~c).struct_eq(True) and (c & ~c).struct_eq(False)
    assert (~~c).struct_eq(c) and (~(t.symb_eq(1))).operand.struct_eq(t.symb_eq(1))
    d = T > t
    assert (c & (c | d)).struct_eq(c) and (c | (c & d)).struct_eq(c)
    assert (c & c).struct_eq(c)
    assert (ie.ConstInt(1) < 2).struct_eq(True) and (t + 1 < t).struct_eq(False)
    assert isinstance(c & d, ie.And) and isinstance(c | d, ie.Or)
    with pytest.raises(IndexExprError):
        bool(t < T)


def test_min_max_module_functions() -> None:
    assert ie.max(t).struct_eq(t) and ie.min(3).struct_eq(3)
    assert ie.max(2, 7, 4).struct_eq(7) and ie.min(2, 7, -4).struct_eq(-4)
    m = ie.max(0, t - 4, 3)
    assert isinstance(m, ie.Max) and m.evaluate({t: 10}) == 6 and m.evaluate({t: 0}) == 3
    assert ie.min(t, t).struct_eq(t)
    assert len(ie.min(ie.min(t, T), b).operands) == 3


def test_piecewise_first_true_wins_and_errors() -> None:
    p = ie.piecewise([(t < 3, t), (t < 10, 2 * t), (t >= 0, T)])
    assert [p.evaluate({t: v, T: 99}) for v in (0, 5, 12)] == [0, 10, 99]
    with pytest.raises(IndexExprError):
        ie.piecewise([(t > 0, t)]).evaluate({t: -1})
    assert ie.piecewise([(False, t), (True, T)]).struct_eq(T)


# --------------------------------------------------------------------------- evaluation


def test_evaluate_matches_python_arithmetic_with_negatives() -> None:
    rng = random.Random(0)
    for _ in range(300):
        x, y = rng.randint(-50, 50), rng.choice([v for v in range(-9, 10) if v != 0])
        v = {t: x, T: y}
        assert (t // T).evaluate(v) == x // y
        assert (t % T).evaluate(v) == x % y
        assert (t // y).evaluate(v) == x // y and (t % y).evaluate(v) == x % y
        assert (3 * t - T + 7).evaluate(v) == 3 * x - y + 7
        assert ie.max(t, T, 0).evaluate(v) == max(x, y, 0)
        assert (t < T).evaluate(v) == (x < y) and (t.symb_ne(T)).evaluate(v) == (x != y)
    assert ie.evaluate(t + 1, {t: 2}) == 3 and ie.evaluate_int(5) == 5
    with pytest.raises(KeyError):
        (t + T).evaluate({t: 1})
    assert (t + T).try_eval({t: 1}) is None and (t + T).try_eval({t: 1, T: 2}) == 3


def test_partial_eval_remap_and_symbol_sets() -> None:
    e = ie.max(0, t - T + 1) + b
    assert e.partial_eval({T: 3, b: 0}).struct_eq(ie.max(0, t - 2))
    assert e.remap({t: T - 1, b: 0}).struct_eq(0)
    assert e.vars_used() == {t, b} and e.bound_symbols_used() == {T}
    assert e.symbols_used() == {t, b, T} and e.accesses_bound()
    assert not e.is_constant() and (T - 1).is_constant()
    assert (t - 1).as_upper_bound_access().struct_eq(T - 2)
    assert ie.max(0, t - 3).as_lower_bound_access().struct_eq(0)
    assert ie.slice_(0, t + 1).as_upper_bound_access().struct_eq(ie.Slice(ie.ConstInt(0), T))


def test_enumerate_all_cond_branches_disjoint_and_complete() -> None:
    e = ie.piecewise([(t < 2, t), (t < 5, ie.piecewise([(T > 0, T), (True, 0)]))]) + 1
    alts = e.enumerate_all_cond_branches()
    assert len(alts) == 3
    for v in GRID:
        holding = [x for c, x in alts if c is not None and c.evaluate(v)]
        if v[t] < 5:
            assert len(holding) == 1 and holding[0].evaluate(v) == e.evaluate(v)
        else:
            assert holding == []
    assert (t + 1).enumerate_all_cond_branches()[0][0] is None


def test_evaluate_shape() -> None:
    seq = ie.lift_to_ie_seq([b, ie.slice_(0, t + 1), ie.slice_(t, T)])
    assert seq.evaluate_shape({b: 0, t: 2, T: 10}) == (3, 8)
    assert (t + 1).evaluate_shape({t: 1}) == ()


# --------------------------------------------------------------------------- code generation


@pytest.mark.parametrize("e", _int_exprs() + NON_AFFINE, ids=str)
def test_to_py_agrees_with_evaluate(e: ie.IntIndexValue) -> None:
    fn = ie.compile_py(e, ["t", "T"])
    renamed = eval(f"lambda c0, c1: {e.to_py({'t': 'c0', 'T': 'c1'})}", dict(ie.PY_GLOBALS))
    checked = 0
    for v in GRID:
        try:
            want = e.evaluate(v)
        except (ZeroDivisionError, IndexExprError):
            continue
        assert fn(v[t], v[T]) == want, (e, v)
        assert renamed(v[t], v[T]) == want
        checked += 1
    assert checked > len(GRID) // 2


def test_to_py_booleans_slices_sequences() -> None:
    c = (t < 3) & ~(T.symb_eq(t)) | (t >= 6)
    f = ie.compile_py(c, ["t", "T"])
    for v in GRID:
        assert f(v[t], v[T]) == c.evaluate(v)
    s = ie.slice_(ie.max(0, t - 2), t + 1)
    assert isinstance(s, ie.Slice) and s.bounds_py() == ("max((t - 2), 0)", "(t + 1)")
    seq = ie.lift_to_ie_seq([b, s])
    assert seq.members_py({"b": "i"}) == ("i", "slice(max((t - 2), 0), (t + 1))")
    assert ie.compile_py(seq, ["t", "b"])(5, 1) == (1, slice(3, 6))
    piece = ie.piecewise([(t > 0, t)])
    with pytest.raises(IndexExprError):
        ie.compile_py(piece, ["t"])(-3)


# --------------------------------------------------------------------------- isl


def _isl_image(expr_isl: str, tv: int, Tv: int) -> list[int]:
    m = isl.Map(f"[T] -> {{ [t] -> [{expr_isl}] }}")
    m = m.intersect_params(isl.Set(f"[T] -> {{ : T = {Tv} }}"))
    img = m.intersect_domain(isl.Set(f"[T] -> {{ [{tv}] }}")).range()
    pts: list[int] = []
    img.foreach_point(lambda p: pts.append(p.get_coordinate_val(isl.dim_type.set, 0).to_python()))
    return pts


@pytest.mark.parametrize("e", _int_exprs(), ids=str)
def test_to_isl_images_agree_with_evaluate(e: ie.IntIndexValue) -> None:
    pieces = ie.isl_pieces(e)
    for v in GRID[::3]:
        want = e.evaluate(v)
        got: list[int] = []
        for cond, src in pieces:
            if (
                cond is not None
                and isl.Set(f"[T] -> {{ [t] : {cond} }}")
                .intersect(isl.Set(f"[T] -> {{ [{v[t]}] : T = {v[T]} }}"))
                .is_empty()
            ):
                continue
            got += _isl_image(src, v[t], v[T])
        assert got == [want], (e, v, pieces)


def test_to_isl_rejects_non_affine() -> None:
    for e in (t * T, t**2, t // T, t % T, t / 2, ie.piecewise([(t < 1, t), (True, T)])):
        with pytest.raises(ie.NonAffineIndexExprError):
            e.to_isl()
    assert issubclass(ie.NonAffineIndexExprError, IndexExprError)
    assert isl.PwAff(f"[T] -> {{ [t] -> [{ie.ceil(t / 2).to_isl()}] }}")  # ceil(a/c) is fine


@pytest.mark.parametrize(
    "c",
    [
        t < T,
        (t >= 1) & (t < T - 1),
        ~(t < 3) | t.symb_eq(T),
        t.symb_ne(2) & ~((t > 4) & (T <= 3)),
        (t % 2).symb_eq(0) | (t // 3 > T),
        ie.max(t, 2) < ie.piecewise([(T > 0, T), (True, 1)]),
        ie.ConstBool(True),
    ],
    ids=str,
)
def test_boolean_to_isl_sets_agree_with_evaluate(c: ie.BooleanIndexValue) -> None:
    s = isl.Set(f"[T] -> {{ [t] : {ie.isl_constraint_str(c)} }}")
    for v in GRID:
        pt = isl.Set(f"[T] -> {{ [{v[t]}] : T = {v[T]} }}")
        assert (not s.intersect(pt).is_empty()) == c.evaluate(v), (c, v)


@pytest.mark.parametrize("e", _int_exprs(), ids=str)
def test_from_isl_pw_aff_round_trip(e: ie.IntIndexValue) -> None:
    alts = [f"[t] -> [{x}] : {c}" if c else f"[t] -> [{x}]" for c, x in ie.isl_pieces(e)]
    pa = isl.PwAff(f"[T] -> {{ {'; '.join(alts)} }}")
    back = ie.from_isl_pw_aff(pa, {"t": t, "T": T})
    assert back.vars_used() <= {t}
    for v in GRID:
        assert back.evaluate(v) == e.evaluate(v), (e, back, v)
    assert back.logical_eq(e)


def test_from_isl_aff_and_fresh_symbols() -> None:
    aff = isl.Aff("[N] -> { [i, j] -> [(2i - j + floor((N + i)/4))] }")
    e = ie.from_isl_aff(aff)
    i, j, N = ie.Symbol("i"), ie.Symbol("j"), ie.Symbol("N", is_bound=True)
    assert {s.name for s in e.symbols_used()} == {"i", "j", "N"}
    assert next(s for s in e.symbols_used() if s.name == "N").is_bound
    for iv, jv, Nv in itertools.product(range(-3, 4), range(-2, 3), (0, 5, -7)):
        assert e.evaluate({i: iv, j: jv, N: Nv}) == 2 * iv - jv + (Nv + iv) // 4


# --------------------------------------------------------------------------- equality


def test_logical_eq_examples() -> None:
    D0 = ie.Symbol("D0", is_bound=True, idx=1)
    assert ie.logical_eq(ie.ConstInt(0) - 1 + 2 - 1, 0)
    assert ie.logical_eq(D0 * 2 // 2, D0) and (D0 * 2 // 2).logical_eq(D0)
    assert ie.logical_eq(t + t + 1, 2 * t + 1) and not ie.logical_eq(t + 1, t)
    assert ie.logical_eq((t // 2) * 2 + t % 2, t)
    assert ie.logical_eq(ie.max(t, T), -ie.min(-t, -T))
    assert ie.logical_eq(t < 5, ~(t >= 5)) and not ie.logical_eq(t < 5, t <= 5)
    assert ie.logical_eq(t * t + 2 * t, t * (t + 2))  # sympy fallback
    assert not ie.logical_eq(t * T, t * t)
    assert ie.logical_eq(ie.slice_(0, t + 1), ie.Slice(ie.ConstInt(0), 2 + t - 1))
    assert not ie.struct_eq(t + T, T + t) and ie.logical_eq(t + T, T + t)


def test_symbol_identity_and_containers() -> None:
    d = {ie.Symbol("i1", idx=4): "x", T: "y"}
    assert d[ie.Symbol("i1", idx=9)] == "x" and d[ie.Symbol("T", True, 1)] == "y"
    assert ie.Symbol("i1") in d and ie.Symbol("zz") not in d
    syms = [t, T, b]
    assert ie.Symbol("b") in syms and syms.index(ie.Symbol("b")) == 2
    assert ie.Symbol("q") not in syms and t not in [0, 1]
    assert hash(t) == hash("t") and hash(t + 1) == hash(ie.Symbol("t") + 1)
    assert {t + 1: 1}[ie.Symbol("t") + 1] == 1
    assert bool(t.symb_eq(ie.Symbol("t"))) and bool(t != T) and not bool(t != ie.Symbol("t"))
    assert isinstance(t == 0, ie.Equal) and isinstance(t != 0, ie.Not)
    assert T.as_var().struct_eq(t) and t.as_bound().is_bound and t.as_bound().idx == 1
    assert t.as_bound().name == "T" and T.as_var().idx == 0 and t.is_variable()


def test_symbols_helpers() -> None:
    a, c = ie.symbols("a c")
    assert a.name == "a" and not a.is_bound and isinstance(c, ie.Symbol)
    A, C = ie.bound_symbols("A, C")
    assert A.is_bound and C.name == "C" and A.as_var().struct_eq(a)
    assert isinstance(ie.symbols("x"), ie.Symbol)


# --------------------------------------------------------------------------- slices / sequences


def test_slice_collapse_and_kinds() -> None:
    assert ie.slice_(t, t + 1).struct_eq(t)
    assert ie.slice_(3, 4).struct_eq(3)
    with pytest.raises(IndexExprError):
        ie.slice_(t, t)
    with pytest.raises(IndexExprError):
        ie.slice_(5, 2)
    g, s = ie.slice_(0, t + 1), ie.slice_(t, T)
    assert isinstance(g, ie.Slice) and g.is_growing_slice() and not g.is_shrinking_slice()
    assert s.is_shrinking_slice() and not s.is_growing_slice() and not s.is_point()
    assert g.evaluate({t: 2}) == slice(0, 3) and g.length().evaluate({t: 2}) == 3
    assert g == ie.slice_(0, t + 1) and g != s and hash(g) == hash(ie.slice_(0, t + 1))


def test_index_sequence_api() -> None:
    seq = ie.lift_to_ie([b, t - 1])
    assert isinstance(seq, ie.IndexSequence) and len(seq) == 2 and list(seq)[0].struct_eq(b)
    assert seq[1].struct_eq(t - 1) and isinstance(seq[0:1], ie.IndexSequence)
    assert seq.replace_idx(1, 0)[1].struct_eq(0) and len(seq.skip_idx(0)) == 1
    assert seq.prepend_member(T)[0].struct_eq(T) and seq.append_member(3)[2].struct_eq(3)
    assert not seq.is_basis() and ie.lift_to_ie([b, t]).is_basis()
    assert not ie.lift_to_ie([b, T]).is_basis()
    assert seq.num_slices() == 0 and seq.append_member(ie.slice_(0, T)).num_slices() == 1
    assert seq.evaluate({b: 1, t: 5}) == (1, 4)
    assert seq == ie.lift_to_ie([ie.Symbol("b"), t - 1])


# --------------------------------------------------------------------------- lifting


def test_lifting() -> None:
    assert ie.lift_to_ie(3).struct_eq(ie.ConstInt(3)) and isinstance(ie.lift_to_ie(3), ie.ConstInt)
    assert isinstance(ie.lift_to_ie(True), ie.ConstBool)
    assert isinstance(ie.lift_to_ie(slice(0, 4)), ie.Slice)
    assert ie.lift_to_ie(slice(2, 3)).struct_eq(2)
    assert isinstance(ie.lift_to_ie(slice(t, T, 1)), ie.Slice)
    for bad in ("t", slice(None, 3), slice(0, 4, 2), object()):
        with pytest.raises(IndexExprError):
            ie.lift_to_ie(bad)
    with pytest.raises(IndexExprError):
        ie.lift_to_int_ie(t < 3)
    with pytest.raises(IndexExprError):
        ie.lift_to_bool_ie(3)
    with pytest.raises(IndexExprError):
        ie.lift_to_ie_atom([1, 2])
    assert ie.lift_to_bool_ie(False).struct_eq(ie.ConstBool(False))
    assert isinstance(ie.lift_to_ie_seq(t), ie.IndexSequence)
    assert ie.ConstFloat is ie.ConstInt and (ie.ConstFloat(1.5) * 2).evaluate({}) == 3.0


def test_error_names_expression() -> None:
    with pytest.raises(IndexExprError, match=r"\(t \+ 1\)"):
        _ = (t + 1) // 0
    with pytest.raises(IndexExprError, match="'oops'"):
        ie.lift_to_ie("oops")


def test_simplify_is_equivalent() -> None:
    for e in _int_exprs():
        s = e.simplify()
        for v in GRID:
            assert s.evaluate(v) == e.evaluate(v)
    assert (t + T - t).simplify().struct_eq(T)
    assert ((4 * t + 2 * T + 6) // 2).simplify().struct_eq(2 * t + T + 3)
    assert ((4 * t + T + 7) % 2).simplify().struct_eq((T + 1) % 2)
    assert ((t + 2) + (T - t) - 2).simplify().struct_eq(T)
