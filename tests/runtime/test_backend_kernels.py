"""Kernel by kernel, the numpy and jax backends compute what the torch backend computes,
with the dtype the op's `infer` promises (Tempo's lattice, not numpy's or torch's)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

import tempo.prims  # noqa: F401 - registers the kernels these tests call
from tempo.core import ops
from tempo.core.domain import Domain
from tempo.core.dtype import dtypes
from tempo.core.shape import Shape
from tempo.runtime.backends.jax import JaxBackend
from tempo.runtime.backends.numpy import NumpyBackend
from tempo.runtime.backends.torch import TorchBackend

R = np.random.default_rng(0)
BACKENDS = {"numpy": NumpyBackend(), "jax": JaxBackend(), "torch": TorchBackend()}
E = Domain.empty()


def f32(*shape: int) -> np.ndarray:
    return R.standard_normal(shape).astype(np.float32)


def i32(*shape: int, lo: int = -5, hi: int = 6) -> np.ndarray:
    return R.integers(lo, hi, shape).astype(np.int32)


def mk(cls: type[ops.Op], **kw: Any) -> ops.Op:
    return cls(op_id=1, domain=E, **kw)


TIES = np.array([[1, 2, 2, 0, 2, 1], [3, 3, 0, 0, 1, 3]], dtype=np.float32)
ROUND = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1.7, -2.2], dtype=np.float32)
X = f32(2, 3, 4)

CASES: list[tuple[str, ops.Op, list[np.ndarray], tuple]] = [
    *[(f"unary-{fn}", mk(ops.UnaryOp, fn=fn), [np.abs(X) + 0.1], ()) for fn in sorted(ops.UNARY_FNS)
      if fn not in ("not",)],
    ("unary-exp-int", mk(ops.UnaryOp, fn="exp"), [i32(5)], ()),
    ("unary-sqrt-int64", mk(ops.UnaryOp, fn="sqrt"), [np.arange(5, dtype=np.int64)], ()),
    ("unary-neg-uint8", mk(ops.UnaryOp, fn="neg"), [np.array([0, 5, 200], np.uint8)], ()),
    ("unary-round-half-even", mk(ops.UnaryOp, fn="round"), [ROUND], ()),
    ("unary-trunc", mk(ops.UnaryOp, fn="trunc"), [ROUND], ()),
    ("unary-floor-int", mk(ops.UnaryOp, fn="floor"), [i32(4)], ()),
    ("unary-relu-int", mk(ops.UnaryOp, fn="relu"), [i32(6)], ()),
    ("unary-sigmoid-far", mk(ops.UnaryOp, fn="sigmoid"),
     [np.array([-100, -20, 0, 20, 100], np.float32)], ()),
    ("unary-not", mk(ops.UnaryOp, fn="not"), [np.array([True, False])], ()),
    ("unary-isnan", mk(ops.UnaryOp, fn="isnan"), [np.array([np.nan, 1, np.inf], np.float32)], ()),
    *[(f"binary-{fn}", mk(ops.BinaryOp, fn=fn), [f32(3, 1), np.abs(f32(4)) + 0.5], ())
      for fn in sorted(ops.BINARY_FNS) if fn not in ("and", "or", "xor")],
    *[(f"binary-{fn}", mk(ops.BinaryOp, fn=fn), [R.random(5) < .5, R.random(5) < .5], ())
      for fn in ("and", "or", "xor")],
    ("binary-div-int", mk(ops.BinaryOp, fn="div"), [i32(5), i32(5, lo=1)], ()),
    ("binary-fmod-int", mk(ops.BinaryOp, fn="fmod"), [i32(6), i32(6, lo=1)], ()),
    ("binary-fmod-neg", mk(ops.BinaryOp, fn="fmod"), [f32(6) * 4, np.full(6, 1.5, np.float32)], ()),
    ("binary-add-i64-f32", mk(ops.BinaryOp, fn="add"), [np.arange(3), f32(3)], ()),
    ("binary-add-i8-u8", mk(ops.BinaryOp, fn="add"), [np.int8([1, -2]), np.uint8([3, 200])], ()),
    ("binary-mul-i32-i8", mk(ops.BinaryOp, fn="mul"), [i32(4), np.int8([1, 2, 3, -4])], ()),
    ("binary-pow-int", mk(ops.BinaryOp, fn="pow"), [i32(4), np.int32([0, 1, 2, 3])], ()),
    ("binary-lt-mixed", mk(ops.BinaryOp, fn="lt"), [i32(5), f32(5)], ()),
    ("binary-max-nan", mk(ops.BinaryOp, fn="maximum"),
     [np.float32([np.nan, 1, 2]), np.float32([0, np.nan, 3])], ()),
    ("where", mk(ops.WhereOp), [R.random((3, 1)) < .5, f32(3, 4), f32(4)], ()),
    ("where-promote", mk(ops.WhereOp), [R.random(4) < .5, i32(4), f32(4)], ()),
    *[(f"cast-{dt}", mk(ops.CastOp, dtype=dt), [f32(6) * 3], ())
      for dt in (dtypes.int32, dtypes.int64, dtypes.bool_, dtypes.float16, dtypes.float64,
                 dtypes.int8)],
    ("cast-int-float", mk(ops.CastOp, dtype=dtypes.float32), [i32(4)], ()),
    ("sum-0", mk(ops.SumOp, dims=(0,)), [X], ()),
    ("sum-02-keep", mk(ops.SumOp, dims=(0, 2), keepdim=True), [X], ()),
    ("sum-all", mk(ops.SumOp, dims=(0, 1, 2)), [X], ()),
    ("sum-none", mk(ops.SumOp, dims=()), [X], ()),
    ("sum-bool", mk(ops.SumOp, dims=(0,)), [R.random((4, 3)) < .5], ()),
    ("sum-int8", mk(ops.SumOp, dims=(1,)), [np.int8([[100, 100], [-100, 5]])], ()),
    ("sum-half", mk(ops.SumOp, dims=(0,)), [f32(50).astype(np.float16)], ()),
    ("max-1", mk(ops.MaxOp, dim=1), [TIES], ()),
    ("max-0-keep", mk(ops.MaxOp, dim=0, keepdim=True), [TIES], ()),
    ("max-nan", mk(ops.MaxOp, dim=0), [np.float32([1, np.nan, 3, np.nan])], ()),
    ("max-int", mk(ops.MaxOp, dim=-1), [i32(3, 5)], ()),
    ("cumsum-0", mk(ops.CumsumOp, dim=0), [X], ()),
    ("cumsum-neg", mk(ops.CumsumOp, dim=-1), [X], ()),
    ("cumsum-int", mk(ops.CumsumOp, dim=0), [np.int8([100, 100, 1])], ()),
    ("sort-asc-stable", mk(ops.SortOp, dim=1, stable=True), [TIES], ()),
    ("sort-desc-stable", mk(ops.SortOp, dim=1, descending=True, stable=True), [TIES], ()),
    ("sort-desc-dim0", mk(ops.SortOp, dim=0, descending=True, stable=True), [TIES], ()),
    ("sort-unstable-no-ties", mk(ops.SortOp, dim=-1), [f32(3, 7)], ()),
    ("sort-nan", mk(ops.SortOp, dim=0, stable=True), [np.float32([3, np.nan, 1, -np.inf])], ()),
    ("matmul-vv", mk(ops.MatMulOp), [f32(3), f32(3)], ()),
    ("matmul-mv", mk(ops.MatMulOp), [f32(2, 3), f32(3)], ()),
    ("matmul-vm", mk(ops.MatMulOp), [f32(3), f32(3, 4)], ()),
    ("matmul-bcast", mk(ops.MatMulOp), [f32(5, 2, 3), f32(3, 4)], ()),
    ("matmul-bcast2", mk(ops.MatMulOp), [f32(1, 2, 3), f32(4, 3, 2)], ()),
    ("matmul-promote", mk(ops.MatMulOp), [i32(2, 3), f32(3, 2)], ()),
    ("index_select-0d", mk(ops.IndexSelectOp, dim=1), [X, np.array(2)], ()),
    ("index_select-1d", mk(ops.IndexSelectOp, dim=2), [X, np.array([3, 0, 0, 1])], ()),
    ("gather", mk(ops.GatherOp, dim=1), [X, R.integers(0, 3, (2, 5, 4))], ()),
    ("gather-smaller", mk(ops.GatherOp, dim=0), [f32(4, 5), R.integers(0, 4, (2, 3))], ()),
    ("scatter_add", mk(ops.ScatterAddOp, dim=0),
     [f32(3, 4), R.integers(0, 3, (5, 4)), f32(5, 4)], ()),
    ("scatter_add-smaller", mk(ops.ScatterAddOp, dim=1),
     [f32(3, 4), R.integers(0, 4, (2, 2)), f32(3, 3)], ()),
    ("index_add", mk(ops.IndexAddOp, dim=1, alpha=0.5),
     [f32(3, 4), np.array([0, 2, 0]), f32(3, 3)], ()),
    ("index_add-0d", mk(ops.IndexAddOp, dim=1), [f32(3, 4), np.array(2), f32(3)], ()),
    ("index_add-int", mk(ops.IndexAddOp, dim=0), [i32(3, 2), np.array([1, 1]), i32(2, 2)], ()),
    ("pad-const", mk(ops.PadOp, padding=((1, 2), (0, 1)), value=7.0), [f32(2, 3)], ()),
    ("pad-reflect", mk(ops.PadOp, padding=((2, 1),), mode="reflect"), [f32(4, 2)], ()),
    ("pad-reflect-long", mk(ops.PadOp, padding=((0, 0), (5, 7)), mode="reflect"), [f32(2, 3)], ()),
    ("pad-replicate", mk(ops.PadOp, padding=((3, 1), (1, 0)), mode="replicate"), [f32(2, 3)], ()),
    ("cat-promote", mk(ops.CatOp, dim=1), [f32(2, 1), i32(2, 3), f32(2, 2)], ()),
    ("flip", mk(ops.FlipOp, dims=(0, 2)), [X], ()),
    ("permute", mk(ops.PermuteOp, dims=(2, 0, 1)), [X], ()),
    ("reshape", mk(ops.ReshapeOp, shape=Shape.from_((6, 4))), [X], ()),
    ("expand", mk(ops.ExpandOp, shape=Shape.from_((5, 3, 4))), [f32(3, 1)], ()),
    ("slice-static", mk(ops.SliceOp, dim=1, start=1, length=2), [X], ()),
    ("fill", mk(ops.FillOp, value=3, shape=Shape.from_((2, 2)), dtype=dtypes.int16), [], ()),
    ("const", mk(ops.ConstOp, value=np.arange(4.0), dtype=dtypes.float32), [], ()),
    ("eval_symbol", mk(ops.EvalSymbolOp, symbol=None, dtype=dtypes.int64), [], (5,)),
]
_CONV = [
    ("conv1d", dict(n_dims=1, stride=(2,), padding=(1,), dilation=(1,)), (2, 4, 9), (6, 4, 3)),
    ("conv2d-groups-dil", dict(n_dims=2, stride=(1, 2), padding=(2, 0), dilation=(2, 1),
                               groups=2), (1, 4, 7, 6), (6, 2, 3, 2)),
    ("conv3d", dict(n_dims=3, stride=(1, 1, 2), padding=(0, 1, 1), dilation=(1, 1, 1)),
     (1, 2, 4, 5, 5), (3, 2, 2, 3, 3)),
    ("convT1d", dict(n_dims=1, stride=(3,), padding=(1,), dilation=(2,), transposed=True,
                     output_padding=(2,)), (2, 4, 5), (4, 3, 3)),
    ("convT2d-groups", dict(n_dims=2, stride=(2, 1), padding=(0, 1), dilation=(1, 1),
                            transposed=True, groups=2), (1, 4, 3, 4), (4, 3, 2, 3)),
    ("convT2d-bigpad", dict(n_dims=2, stride=(2, 2), padding=(2, 2), dilation=(1, 1),
                            transposed=True, output_padding=(1, 0)), (1, 2, 5, 5), (2, 3, 2, 2)),
]
CASES += [(n, mk(ops.ConvOp, **kw), [f32(*xs), f32(*ws)], ()) for n, kw, xs, ws in _CONV]


def _as_recorded(op: ops.Op, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The inputs as kernels receive them in a program: cast to `Op.input_dtypes`, the one
    place dtypes are promoted (the front end records those casts with the op)."""
    params = {f.name: getattr(op, f.name) for f in dataclasses.fields(op)
              if f.name not in ("op_id", "domain", "site", "tags")}
    want = type(op).input_dtypes([dtypes.from_np(a.dtype) for a in inputs], **params)
    return [a.astype(dtypes.to_np(dt)) for a, dt in zip(inputs, want)]


def _run(backend: str, op: ops.Op, inputs: list[np.ndarray], extra: tuple) -> list[tuple]:
    be = BACKENDS[backend]
    args = [be.from_numpy(a, dtypes.from_np(a.dtype)) for a in _as_recorded(op, inputs)]
    out = be.kernel(op)(*args, *extra)
    outs = out if isinstance(out, tuple) else (out,)
    return [(be.to_numpy(o), be.dtype_name(o)) for o in outs]


@pytest.mark.parametrize("backend", ["torch", "numpy", "jax"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_kernel_agrees_with_torch(backend: str, case: tuple) -> None:
    """Every backend returns the dtype `infer` promises, and numpy/jax the values torch
    computes: floats to 1e-5, ints and bools exactly."""
    name, op, inputs, extra = case
    got = _run(backend, op, inputs, extra)
    want = _run("torch", op, inputs, extra)
    recorded = _as_recorded(op, inputs)
    _, want_dts = op.infer([Shape.from_(a.shape) for a in recorded],
                           [dtypes.from_np(a.dtype) for a in recorded])
    assert len(got) == len(want) == len(want_dts)
    for (g, g_dt), (w, w_dt), dt in zip(got, want, want_dts):
        assert isinstance(g, np.ndarray) and g.shape == w.shape, (g.shape, w.shape)
        assert g_dt == w_dt == dt.name, f"{name}: dtype {g_dt} (torch {w_dt}), infer {dt.name}"
        assert g.dtype == w.dtype
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, atol=1e-5, rtol=1e-5, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w, strict=True)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_dynamic_slice_fill_reshape_take_runtime_args(backend: str) -> None:
    be = BACKENDS[backend]
    t = Shape.from_((2, 3))  # any symbolic dim works: the kernel only sees its value
    x = be.from_numpy(X, dtypes.float32)
    sym = ops.SliceOp(op_id=1, domain=E, dim=2, start=_sym(), length=2)
    np.testing.assert_array_equal(be.to_numpy(be.kernel(sym)(x, 1)), X[:, :, 1:3])
    both = ops.SliceOp(op_id=1, domain=E, dim=0, start=_sym(), length=_sym())
    np.testing.assert_array_equal(be.to_numpy(be.kernel(both)(x, 1, 1)), X[1:2])
    fill = ops.FillOp(op_id=1, domain=E, value=1.5, shape=Shape.from_((_sym(), 2)),
                      dtype=dtypes.float32)
    assert be.to_numpy(be.kernel(fill)(4)).shape == (4, 2)
    assert t.is_static()


def _sym() -> Any:
    from tempo.core import index_expr as ie

    s = ie.symbols("zz")
    return s[0] if isinstance(s, tuple | list) else s


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_rand_is_fresh_per_call_and_seeded(backend: str) -> None:
    op = ops.RandOp(op_id=1, domain=E, shape=Shape.from_((3,)), dtype=dtypes.float32)
    cls = type(BACKENDS[backend])
    k1, k2 = cls(seed=4).kernel(op), cls(seed=4).kernel(op)
    a, b = np.asarray(k1()), np.asarray(k1())
    assert a.dtype == np.float32 and a.shape == (3,) and ((a >= 0) & (a < 1)).all()
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, np.asarray(k2()))


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_results_convert_to_torch_through_dlpack(backend: str) -> None:
    be = BACKENDS[backend]
    for op, inp in [(mk(ops.FlipOp, dims=(1,)), X), (mk(ops.SumOp, dims=(0, 1, 2)), X),
                    (mk(ops.ExpandOp, shape=Shape.from_((4, 3, 4))), X[0, :, :1]),
                    (mk(ops.CastOp, dtype=dtypes.bool_), X)]:
        out = be.kernel(op)(be.from_numpy(inp, dtypes.from_np(inp.dtype)))
        t = torch.from_dlpack(out)  # what Executor.get_spatial_tensor_torch does
        np.testing.assert_array_equal(t.numpy(), be.to_numpy(out))
        assert be.to_torch(out).shape == t.shape


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_torch_select_by_a_0d_index_is_a_view_and_keeps_its_range_check(dim: int) -> None:
    """A 0-d index selects a view (the kernel passes the index tensor to select; a bool
    index goes through int()): the values numpy indexing gives, for every integer dtype
    and a negative index (wraps, as before); one past the end is still an IndexError."""
    x_np = f32(4, 5, 3)
    x = torch.from_numpy(x_np.copy())
    kern = TorchBackend().kernel(mk(ops.IndexSelectOp, dim=dim))
    for dt in (torch.int8, torch.uint8, torch.int32, torch.int64, torch.bool):
        i = torch.tensor(1, dtype=dt)
        got = kern(x, i)
        assert got.data_ptr() == x[(slice(None),) * dim + (1,)].data_ptr()  # a view
        np.testing.assert_array_equal(got.numpy(), np.take(x_np, 1, axis=dim))
    np.testing.assert_array_equal(kern(x, torch.tensor(-1)).numpy(),
                                  np.take(x_np, -1, axis=dim))
    with pytest.raises(IndexError):
        kern(x, torch.tensor(x.shape[dim]))


def test_torch_static_reshape_and_expand_take_every_rank() -> None:
    """Static shapes go to torch.reshape / expand(*sizes); the 0-d ones too."""
    be = TorchBackend()
    x = torch.arange(6.0)
    assert torch.equal(be.kernel(mk(ops.ReshapeOp, shape=Shape((2, 1, 3))))(x),
                       x.view(2, 1, 3))
    one = torch.tensor([7.0])
    got = be.kernel(mk(ops.ReshapeOp, shape=Shape(())))(one)
    assert got.shape == () and got.item() == 7.0
    got = be.kernel(mk(ops.ExpandOp, shape=Shape((4, 2, 3))))(x.view(2, 3))
    assert torch.equal(got, x.view(1, 2, 3).expand(4, 2, 3))
    got = be.kernel(mk(ops.ExpandOp, shape=Shape(())))(torch.tensor(3.0))
    assert got.shape == () and got.item() == 3.0
