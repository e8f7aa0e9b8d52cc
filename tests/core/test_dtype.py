"""Promotion lattice, implied dtypes and conversions of `tempo.core.dtype` (API §5).
JAX's own promotion (x64) is an independent reference where the two lattices agree."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
import torch

from tempo.core.dtype import DataType, dtypes
from tempo.core.errors import DTypeError

D = dtypes
ALL = list(D.fields().values())

# The lattice of API §5, written out independently of the implementation.
EDGES = {
    "bool_": ["int8", "uint8"], "int8": ["int16"], "int16": ["int32"], "int32": ["int64"],
    "int64": ["float16", "bfloat16"], "uint8": ["int16", "uint16"],
    "uint16": ["int32", "uint32"], "uint32": ["int64", "uint64"],
    "uint64": ["float16", "bfloat16"], "float16": ["float32"], "bfloat16": ["float32"],
    "float32": ["float64"], "float64": [],
}
PRIO = {"bool_": 0, "int8": 1, "uint8": 2, "int16": 3, "uint16": 4, "int32": 5, "uint32": 6,
        "int64": 7, "uint64": 8, "float16": 11, "bfloat16": 12, "float32": 13, "float64": 14}


def _up(a: str) -> set[str]:
    out = {a}
    for b in EDGES[a]:
        out |= _up(b)
    return out


def _reference_join(a: str, b: str) -> str:
    return min(_up(a) & _up(b), key=PRIO.__getitem__)


def test_members_bytes_priorities_names() -> None:
    assert set(D.fields()) == set(PRIO)
    for attr, prio in PRIO.items():
        dt = getattr(D, attr)
        assert dt.priority == prio
        assert dt.repr_bytes == D.to_np(dt).itemsize
    assert (str(D.int8), str(D.int64), str(D.float32), str(D.float64)) == (
        "char", "long", "float", "double")
    assert D.float32.eps == float(np.finfo(np.float32).eps)
    assert D.float16.minimum == float(np.finfo(np.float16).tiny)
    assert D.int32.eps is None


def test_datatype_is_frozen() -> None:
    with pytest.raises(AttributeError):
        D.float32.name = "x"  # type: ignore[misc]


@pytest.mark.parametrize("a,b", list(itertools.product(PRIO, PRIO)))
def test_upcast_matches_lattice(a: str, b: str) -> None:
    got = D.upcast(getattr(D, a), getattr(D, b))
    assert got == getattr(D, _reference_join(a, b))
    assert got == D.upcast(getattr(D, b), getattr(D, a))


def test_upcast_examples_and_nary() -> None:
    assert D.upcast(D.int64, D.float32) == D.float32
    assert D.upcast(D.int8, D.float32) == D.float32
    assert D.upcast(D.uint8, D.int8) == D.int16
    assert D.upcast(D.uint64, D.int64) == D.float16
    assert D.upcast(D.bool_, D.uint8, D.int8, D.float16) == D.float16
    assert D.upcast(D.int32) == D.int32
    with pytest.raises(DTypeError):
        D.upcast()


def test_upcast_agrees_with_jax_where_lattices_agree() -> None:
    jax = pytest.importorskip("jax")
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        _compare_with_jax(jax.numpy)
    finally:
        jax.config.update("jax_enable_x64", old)


def _compare_with_jax(jnp: object) -> None:
    checked = 0
    for a, b in itertools.product(PRIO, PRIO):
        na, nb = ("bool" if a == "bool_" else a), ("bool" if b == "bool_" else b)
        ref = D.from_np(np.dtype(jnp.promote_types(na, nb)))
        ours = D.upcast(getattr(D, a), getattr(D, b))
        mixed_int_float = {a, b} & {"uint64"} and {a, b} & {"int8", "int16", "int32", "int64"}
        if mixed_int_float:  # JAX joins int64/uint64 at its weak float (float64 in x64)
            continue
        assert ours == ref, (a, b, ours, ref)
        checked += 1
    assert checked > 120


@pytest.mark.parametrize("val,want", [
    (True, "bool_"), (0, "int8"), (127, "int8"), (-128, "int8"), (128, "int16"),
    (-129, "int16"), (40000, "int32"), (2**31, "int64"), (-(2**63), "int64"), (1.5, "float32"),
    ([1, 2], "int8"), ([1, 300], "int16"), ([1, 2.0], "float32"), ([True, 1], "int8"),
    ([[1], [2.5]], "float32"),
])
def test_implied_python_values(val: object, want: str) -> None:
    assert D.implied(val) == getattr(D, want)


def test_implied_arrays_and_overflow() -> None:
    assert D.implied(np.zeros(2, dtype=np.uint16)) == D.uint16
    assert D.implied(np.float64(1.0)) == D.float64
    assert D.implied(torch.zeros(2, dtype=torch.int64)) == D.int64
    assert D.implied(torch.zeros(2, dtype=torch.bool)) == D.bool_
    with pytest.raises(DTypeError):
        D.implied(2**64)
    with pytest.raises(DTypeError):
        D.implied("abc")


def test_from_and_to_np_round_trip() -> None:
    for attr, dt in D.fields().items():
        assert D.from_np(D.to_np(dt)) == dt
        assert D.from_(str(dt)) == dt
        assert D.from_(attr) == dt
        assert D.from_(D.to_np(dt)) == dt
        assert D.from_(D.to_np(dt).name) == dt


def test_from_backend_dtypes_and_none() -> None:
    assert D.from_(torch.float16) == D.float16
    assert D.from_(torch.int64) == D.int64
    assert D.from_(torch.bool) == D.bool_
    assert D.from_(np.float64) == D.float64
    assert D.from_(None) == D.default_float
    assert D.from_(None, none_dtype=D.int8) == D.int8
    jnp = pytest.importorskip("jax.numpy")
    assert D.from_(jnp.int16) == D.int16
    assert D.from_(jnp.zeros(1, dtype=jnp.float32).dtype) == D.float32
    with pytest.raises(DTypeError):
        D.from_(torch.complex64)
    with pytest.raises(DTypeError):
        D.from_("notatype")


def test_default_float_is_mutable() -> None:
    old = D.default_float
    try:
        D.default_float = D.float16
        assert D.from_(None) == D.float16
    finally:
        D.default_float = old
    assert D.from_(None) == D.float32


def test_classification() -> None:
    ints = {"int8", "int16", "int32", "int64"}
    uints = {"uint8", "uint16", "uint32", "uint64"}
    floats = {"float16", "bfloat16", "float32", "float64"}
    for attr, dt in D.fields().items():
        assert D.is_signed_int(dt) == (attr in ints)
        assert D.is_unsigned_int(dt) == (attr in uints)
        assert D.is_integer(dt) == (attr in ints | uints)
        assert D.is_float(dt) == (attr in floats)
        assert D.is_bool(dt) == (attr == "bool_")


def test_least_upper() -> None:
    assert D.least_upper_float(D.float16) == D.float16
    assert D.least_upper_float(D.int64) == D.float32
    assert D.least_upper_float(D.bool_) == D.float32
    assert D.least_upper_signed_int(D.uint8) == D.int16
    assert D.least_upper_signed_int(D.uint16) == D.int32
    assert D.least_upper_signed_int(D.int32) == D.int32
    assert D.least_upper_signed_int(D.bool_) == D.int8
    with pytest.raises(DTypeError):
        D.least_upper_signed_int(D.float32)


def test_min_max() -> None:
    for dt in ALL:
        if D.is_float(dt):
            assert D.min(dt) == -np.inf and D.max(dt) == np.inf
        elif D.is_bool(dt):
            assert (D.min(dt), D.max(dt)) == (False, True)
        else:
            info = np.iinfo(D.to_np(dt))
            assert (D.min(dt), D.max(dt)) == (int(info.min), int(info.max))


def test_datatype_hashable_and_distinct() -> None:
    assert len({*ALL}) == 13
    assert isinstance(D.int8, DataType)


# ---------------------------------------------------------------- bfloat16
def test_bfloat16_member() -> None:
    """`dtypes.bfloat16` (API §6.5's Llama dtype) was missing: AttributeError. Its constants
    are bfloat16's (8 mantissa bits, float32's exponent), not float16's."""
    bf = D.bfloat16
    assert (bf.name, bf.repr_bytes, bf.priority, repr(bf)) == ("bfloat16", 2, 12,
                                                               "dtypes.bfloat16")
    assert bf.eps == 2.0**-7 == float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps)
    assert bf.minimum == 2.0**-126 == float(np.finfo(np.float32).tiny)
    assert D.is_float(bf) and not D.is_integer(bf) and D.least_upper_float(bf) == bf
    assert D.to_np(bf) == np.dtype(ml_dtypes.bfloat16)
    assert D.min(bf) == -np.inf and D.max(bf) == np.inf


def test_bfloat16_from_every_spelling() -> None:
    jnp = pytest.importorskip("jax.numpy")
    for x in ("bfloat16", "torch.bfloat16", "jnp.bfloat16", torch.bfloat16, jnp.bfloat16,
              ml_dtypes.bfloat16, np.dtype(ml_dtypes.bfloat16), D.bfloat16):
        assert D.from_(x) == D.bfloat16, x
    assert D.implied(torch.zeros(2, dtype=torch.bfloat16)) == D.bfloat16
    assert D.implied(jnp.zeros(2, dtype=jnp.bfloat16)) == D.bfloat16
    assert D.implied(np.zeros(2, dtype=ml_dtypes.bfloat16)) == D.bfloat16
    assert D.implied(ml_dtypes.bfloat16(1.5)) == D.bfloat16
    assert D.from_np(D.to_np(D.bfloat16)) == D.bfloat16


def test_bfloat16_as_default_float() -> None:
    old = D.default_float
    try:
        D.default_float = D.bfloat16
        assert D.from_(None) == D.bfloat16
        assert D.least_upper_float(D.int32) == D.bfloat16
    finally:
        D.default_float = old


@pytest.mark.parametrize("other", list(PRIO))
def test_bfloat16_promotion_equals_jax(other: str) -> None:
    """Every pair with bfloat16 joins as jax.numpy.promote_types (x64) joins it: float16 and
    bfloat16 are siblings under float32, ints and bools become bfloat16."""
    jax = pytest.importorskip("jax")
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        ref = jax.numpy.promote_types(jax.numpy.bfloat16, "bool" if other == "bool_" else other)
    finally:
        jax.config.update("jax_enable_x64", old)
    ours = D.upcast(D.bfloat16, getattr(D, other))
    assert ours == D.from_np(np.dtype(ref)), (other, ours, ref)
    assert D.upcast(getattr(D, other), D.bfloat16) == ours
