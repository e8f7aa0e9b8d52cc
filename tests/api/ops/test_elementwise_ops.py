"""Elementwise ops and activations vs torch eager over shapes x dtypes (incl. NaN/inf)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from op_harness import assert_same, make_input, run_static

import tempo.api.recurrent_tensor as tpo
from tempo.core.errors import TempoError

SHAPES = [(), (5,), (3, 4), (2, 3, 2, 2)]
DTYPES = [torch.bool, torch.int64, torch.float32, torch.float64]


def _f(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype.is_floating_point else x.float()


# name -> (tempo fn, torch fn, needs positive input, dtypes to skip)
UNARY = {
    "exp": (tpo.exp, torch.exp), "ln": (tpo.ln, torch.log), "log2": (tpo.log2, torch.log2),
    "log10": (tpo.log10, torch.log10), "sqrt": (tpo.sqrt, torch.sqrt),
    "sin": (tpo.sin, torch.sin), "cos": (tpo.cos, torch.cos), "tan": (tpo.tan, torch.tan),
    "sigmoid": (tpo.sigmoid, torch.sigmoid), "tanh": (tpo.tanh, torch.tanh),
    "erf": (tpo.erf, torch.erf), "exp2": (tpo.exp2, torch.exp2),
    "reciprocal": (tpo.reciprocal, lambda x: torch.reciprocal(_f(x))),
    "abs": (tpo.abs, torch.abs), "neg": (tpo.neg, torch.neg), "floor": (tpo.floor, torch.floor),
    "ceil": (tpo.ceil, torch.ceil), "round": (tpo.round, torch.round),
    "trunc": (tpo.trunc, torch.trunc), "sign": (tpo.sign, torch.sign),
    "square": (tpo.square, torch.square), "relu": (tpo.relu, torch.relu),
    "isnan": (tpo.isnan, torch.isnan), "isinf": (tpo.isinf, torch.isinf),
    "logical_not": (tpo.logical_not, torch.logical_not),
    "swish": (tpo.swish, lambda x: F.silu(_f(x))), "elu": (tpo.elu, lambda x: F.elu(_f(x))),
    "leakyrelu": (tpo.leakyrelu, lambda x: F.leaky_relu(_f(x), 0.01)),
    "softplus": (tpo.softplus, lambda x: F.softplus(_f(x))),
    "mish": (tpo.mish, lambda x: F.mish(_f(x))),
}
# Tempo deliberately differs from torch on these (documented in API.md §3.8/§5):
# float functions of ints/bools go through least_upper_float (float32), and int ops on bool.
FLOAT_OF_INT = {"exp", "ln", "log2", "log10", "sqrt", "sin", "cos", "tan", "sigmoid", "tanh",
                "erf", "exp2", "swish", "elu", "leakyrelu", "softplus", "mish", "reciprocal"}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name: str, shape: tuple, dtype: torch.dtype) -> None:
    fn, ref = UNARY[name]
    x = make_input(shape, dtype, special=True)
    if name in FLOAT_OF_INT and not dtype.is_floating_point:
        want = ref(x.float())
    else:
        try:
            want = ref(x)
        except (RuntimeError, TypeError, NotImplementedError):
            with pytest.raises(TempoError):
                run_static(fn, x)
            return
    assert_same(run_static(fn, x), want, rtol=1e-5, atol=1e-5)


BINARY = {
    "add": (tpo.add, torch.add), "sub": (tpo.sub, torch.sub), "mul": (tpo.mul, torch.mul),
    "div": (tpo.div, torch.true_divide), "maximum": (tpo.maximum, torch.maximum),
    "minimum": (tpo.minimum, torch.minimum), "lt": (tpo.less_than, torch.lt),
    "le": (tpo.less_than_or_equal, torch.le), "gt": (tpo.greater_than, torch.gt),
    "ge": (tpo.greater_than_or_equal, torch.ge), "eq": (tpo.equals, torch.eq),
    "ne": (tpo.not_equals, torch.ne), "and": (tpo.logical_and, torch.logical_and),
    "or": (tpo.logical_or, torch.logical_or),
    "floor_div": (tpo.floor_div, torch.floor_divide), "remainder": (tpo.remainder, torch.remainder),
    "pow": (tpo.pow_, torch.pow),
}
PAIRS = [(torch.int64, torch.int64), (torch.float32, torch.float32), (torch.int64, torch.float32),
         (torch.float64, torch.float32), (torch.bool, torch.bool), (torch.bool, torch.int64)]
BSHAPES = [((), (3,)), ((3, 4), (4,)), ((2, 1, 3, 1), (4, 1))]


@pytest.mark.parametrize("shapes", BSHAPES, ids=str)
@pytest.mark.parametrize("dts", PAIRS, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name: str, dts: tuple, shapes: tuple) -> None:
    fn, ref = BINARY[name]
    pos = name in ("floor_div", "remainder", "pow")
    x = make_input(shapes[0], dts[0], seed=1, special=not pos, positive=pos)
    y = make_input(shapes[1], dts[1], seed=2, positive=pos)
    if name == "pow" and not y.dtype.is_floating_point:
        y = y.clamp(0, 3)
    common = torch.promote_types(x.dtype, y.dtype)  # tempo has no 0-d weak typing
    try:
        want = ref(x.to(common), y.to(common))
    except (RuntimeError, TypeError, NotImplementedError):
        with pytest.raises(TempoError):
            run_static(fn, x, y)
        return
    got = run_static(fn, x, y)
    assert_same(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32], ids=str)
def test_scalar_operands_and_methods(dtype: torch.dtype) -> None:
    x = make_input((3, 4), dtype, seed=3)
    got = run_static(lambda a: [a + 2, 3 - a, a * 1, a * -1, a * 0, 2.5 * a, a ** 2, a.clip(-1, 2),
                                tpo.where(a > 0, a, -a), a.normalize(1.0, 2.0),
                                tpo.log_base(2.0, a.abs() + 1)], x)
    want = [x + 2, 3 - x, x, -x, torch.zeros_like(x), 2.5 * x, x ** 2, x.clamp(-1, 2),
            torch.where(x > 0, x, -x), (x - 1.0) / (2.0 + 1e-8),
            torch.log(_f(x.abs() + 1)) / math.log(2.0)]
    assert_same(got, want, rtol=1e-5, atol=1e-5, check_dtype=dtype != torch.int64)


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.float32], ids=str)
@pytest.mark.parametrize("exponent", [0, 1, 2, 0.5, 0.0, 1.0, 2.0, 3.0])
def test_pow_literal_exponent_dtype(exponent: float, dtype: torch.dtype) -> None:
    """The special-cased exponents give the dtype of the general path: `int64 ** 2.0` is
    float32 as in torch (it was int64)."""
    x = make_input((5,), dtype, seed=4, positive=True)
    got = run_static(lambda a: a ** exponent, x)
    want = x ** exponent
    if dtype == torch.bool and isinstance(exponent, int):
        want = want.to(torch.int8)  # Tempo: bool ** int literal -> int8 (API §5 lattice)
    assert_same(got, want, rtol=1e-6, atol=1e-6)
