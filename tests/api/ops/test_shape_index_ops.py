"""Shape ops, padding, gather/scatter/index_add/one_hot, matmul and conv vs torch eager."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from op_harness import assert_same, make_input, run_static

import tempo.api.recurrent_tensor as tpo
from tempo.core.errors import DTypeError, TempoError

DTYPES = [torch.bool, torch.int64, torch.float32, torch.float64]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_shape_ops_4d(dtype: torch.dtype) -> None:
    x = make_input((2, 3, 4, 2), dtype, seed=1)
    got = run_static(lambda a: [
        a.reshape((6, -1)), a.flatten(1, -2), a.unflatten(-2, (2, 2)), a.permute((3, 0, 2, 1)),
        a.transpose(-1, 0), a.unsqueeze(-1), a.flip((0, -1)),
        a.repeat((2, 1, 1, 3)), a.repeat_interleave(2, -2), a.expand((3, 2, 3, 4, 2)),
        *a.split(-2, 2), *a.chunk(3, 1), tpo.cat([a, a], dim=-1), tpo.stack([a, a], dim=1),
        a.index(1, -1), a.index(2, tpo.const(np.array([3, 0, 3]))), a.slice_dim(2, 1, 3),
    ], x)
    want = [x.reshape(6, -1), x.flatten(1, -2), x.unflatten(-2, (2, 2)), x.permute(3, 0, 2, 1),
            x.transpose(-1, 0), x.unsqueeze(-1), x.flip((0, -1)), x.repeat(2, 1, 1, 3),
            x.repeat_interleave(2, -2), x.expand(3, 2, 3, 4, 2), *x.chunk(2, -2),
            *x.chunk(3, 1), torch.cat([x, x], -1), torch.stack([x, x], 1), x[:, -1],
            x[:, :, [3, 0, 3]], x[:, :, 1:3]]
    assert_same(got, want)


def test_repeat_short_list_pads_right() -> None:
    x = make_input((2, 3), torch.float32)
    assert_same(run_static(lambda a: a.repeat(2), x), x.repeat(2, 1))
    assert_same(run_static(lambda a: a.repeat((2, 1, 2)), x), x.repeat(2, 1, 2))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "any"])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4, 3)], ids=str)
def test_pad_modes(shape: tuple, mode: str) -> None:
    x = make_input(shape, torch.float32, seed=2)
    pads = [(1, 2), (2, 0)][: len(shape)]
    got = run_static(lambda a: [a.pad(pads, mode), a.pad_dim((0, 1), -1, mode, value=None)], x)
    np_mode = {"constant": "constant", "any": "constant", "reflect": "reflect",
               "replicate": "edge"}[mode]
    full = list(pads) + [(0, 0)] * (len(shape) - len(pads))
    last = [(0, 0)] * (len(shape) - 1) + [(0, 1)]
    want = [torch.from_numpy(np.pad(x.numpy(), full, mode=np_mode)),
            torch.from_numpy(np.pad(x.numpy(), last, mode=np_mode))]
    if mode == "constant":  # cross-check the numpy reference against torch
        assert_same(want[0], F.pad(x, [v for p in reversed(full) for v in p]))
    assert_same(got, want)


def test_pad_value_and_dilate() -> None:
    x = make_input((3, 4), torch.int64, seed=3)
    got = run_static(lambda a: [a.pad([1], value=7), a.dilate(2), a.dilate((1, 3), 2)], x)
    d2 = torch.zeros(5, 7, dtype=x.dtype)
    d2[::2, ::2] = x
    d3 = torch.zeros(3, 10, dtype=x.dtype)
    d3[:, ::3] = x
    assert_same(got, [F.pad(x, [0, 0, 1, 1], value=7), d2, d3])


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float64], ids=str)
def test_gather_scatter_index_add_bit_exact(dtype: torch.dtype) -> None:
    x = make_input((4, 5), dtype, seed=4)
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 4, (3, 5), generator=g)
    src = make_input((3, 5), dtype, seed=5)
    perm = torch.stack([torch.randperm(4, generator=g)[:3] for _ in range(5)], 1)
    iidx = torch.tensor([3, 0, 3])
    perm3 = torch.stack([torch.randperm(3, generator=g) for _ in range(5)], 1)
    got = run_static(lambda a, i, s, p, ii, p3: [
        a.gather(0, i), a.gather(-1, i.slice_dim(1, 0, 4) % 5),
        a.scatter_add(0, i, s), a.index_add(0, ii, s), a.index_add(-1, ii, s.transpose(0, 1)
                                                                   .slice_dim(1, 0, 3).index(0, 0)
                                                                   .unsqueeze(0).expand((4, 3)),
                                                       alpha=2),
        a.scatter(0, p, s), tpo.scatter(0, p3, s),
    ], x, idx, src, perm, iidx, perm3)
    row = src.transpose(0, 1)[0, :3].unsqueeze(0).expand(4, 3)
    want = [x.gather(0, idx), x.gather(-1, idx[:, :4] % 5), x.scatter_add(0, idx, src),
            x.index_add(0, iidx, src), x.index_add(-1, iidx, row, alpha=2),
            x.scatter(0, perm, src), torch.zeros_like(src).scatter(0, perm3, src)]
    assert_same(got, want)


def test_one_hot_and_index_many() -> None:
    c = torch.tensor([[0, 3], [2, 1]])
    x = make_input((3, 4, 5), torch.float32, seed=6)
    got = run_static(lambda a, b: [b.one_hot(4), a.index_many([1, None, 2]),
                                   a.slice_many([slice(0, 2), (1, 3)])], x, c)
    assert_same(got, [F.one_hot(c, 4), x[1, :, 2], x[0:2, 1:3]])


def test_slice_many_takes_index_expression_slices() -> None:
    """accept6b c03: `slice_many([ie.slice_(0, 2), ...])` raised a bare TypeError ('Slice'
    object is not subscriptable); anything else than a slice or a pair is an ArgumentError."""
    from tempo.core import index_expr as ie
    from tempo.core.errors import ArgumentError
    x = make_input((3, 4, 5), torch.float32, seed=7)
    got = run_static(lambda a: [a.slice_many([ie.slice_(1, 3), slice(0, 2), ie.slice_(2, 5)])], x)
    assert_same(got, [x[1:3, 0:2, 2:5]])
    with pytest.raises(ArgumentError, match="slice_many"):
        run_static(lambda a: [a.slice_many([3])], x)


MATMUL = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
          ((2, 1, 3, 4), (5, 4, 2)), ((1, 4), (4, 5)), ((3, 4), (4, 1)), ((2, 1, 4), (2, 4, 1))]


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("shapes", MATMUL, ids=str)
def test_matmul(shapes: tuple, dtype: torch.dtype) -> None:
    x, y = make_input(shapes[0], dtype, 1), make_input(shapes[1], dtype, 2)
    want = torch.matmul(x, y)
    if x.ndim >= 2 and y.ndim >= 2:  # API §3.8: squeeze a size-1 row of x / column of y
        if y.shape[-1] == 1:
            want = want.squeeze(-1)
        if x.shape[-2] == 1:
            want = want.squeeze(-2 if y.shape[-1] != 1 else -1)
    assert_same(run_static(lambda a, b: a @ b, x, y), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_matmul_bool_is_dtype_error(backend: str) -> None:
    """torch has no bool matmul; numpy and jax would compute one: every backend refuses it
    when the op is recorded."""
    x = make_input((3, 4), torch.bool)
    with pytest.raises(DTypeError):
        run_static(lambda a: tpo.matmul(a, a.transpose()), x, backend=backend)


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_matmul_int64_float32_promotes(backend: str) -> None:
    """int64 @ float32 is float32 on every backend, as `MatMulOp.infer` promises (torch's
    own matmul refuses mixed dtypes)."""
    x, y = make_input((3, 4), torch.int64, 1), make_input((4, 2), torch.float32, 2)
    got = run_static(lambda a, b: a @ b, x, y, backend=backend)
    assert_same(got, x.float() @ y, rtol=1e-6, atol=1e-5)


CONVS = [  # (n, input shape, weight shape, kwargs)
    (1, (2, 4, 9), (6, 4, 3), {}),
    (1, (4, 9), (6, 2, 3), {"stride": 2, "padding": 1, "groups": 2}),
    (2, (2, 3, 7, 6), (4, 3, 3, 2), {"dilation": (2, 1), "padding": (1, 0)}),
    (2, (3, 7, 6), (3, 2, 2), {"stride": 2}),  # no batch, no out-channel dim
    (3, (1, 2, 5, 4, 4), (3, 2, 2, 2, 2), {"stride": (1, 2, 1)}),
    (1, (2, 4, 5), (4, 3, 3), {"transposed": True, "stride": 2, "output_padding": 1}),
    (2, (1, 4, 4, 3), (4, 1, 3, 3), {"transposed": True, "groups": 2, "padding": 1}),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv(case: int, dtype: torch.dtype) -> None:
    n, xs, ws, kw = CONVS[case]
    x, w = make_input(xs, dtype, 1), make_input(ws, dtype, 2)
    fn = {1: tpo.conv1d, 2: tpo.conv2d, 3: tpo.conv3d}[n]
    got = run_static(lambda a, b: fn(a, b, **kw), x, w)
    tkw = {k: v for k, v in kw.items() if k != "transposed"}
    xb = x if len(xs) == n + 2 else x.unsqueeze(0)
    wb = w if len(ws) == n + 2 else w.unsqueeze(0)
    if kw.get("transposed"):
        ref = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[n]
    else:
        ref = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    want = ref(xb, wb, **tkw)
    if len(ws) == n + 1:
        want = want.squeeze(1)
    if len(xs) == n + 1:
        want = want.squeeze(0)
    assert_same(got, want, rtol=1e-5, atol=1e-5)


def test_conv_int_matches_or_raises() -> None:
    x, w = make_input((1, 2, 5), torch.int64), make_input((1, 2, 3), torch.int64)
    try:
        want = F.conv1d(x, w)
    except (RuntimeError, NotImplementedError):
        with pytest.raises(TempoError):
            run_static(lambda a, b: tpo.conv1d(a, b), x, w)
        return
    assert_same(run_static(lambda a, b: tpo.conv1d(a, b), x, w), want)


def test_conv_bool_is_tempo_error() -> None:
    x, w = make_input((1, 2, 5), torch.bool), make_input((1, 2, 3), torch.bool)
    with pytest.raises(TempoError):
        run_static(lambda a, b: tpo.conv1d(a, b), x, w)


INDEX_ADD_0D = [((3, 4), 1, (3, 1)), ((3, 4), 0, (1, 4)), ((4, 1), 0, (1, 1)), ((4, 1), 0, (1,)),
                ((3, 4, 1), 1, (3, 1)), ((4,), 0, (1,)), ((4,), 0, ())]


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
@pytest.mark.parametrize("case", INDEX_ADD_0D, ids=str)
def test_index_add_scalar_index(case: tuple, backend: str) -> None:
    """A 0-d index adds one slice; the source may keep the indexed dim with size 1 (torch's
    1-element index) or drop it. The kept-singleton form failed on torch and jax."""
    xs, dim, ss = case
    x, src = make_input(xs, torch.float32, seed=1), make_input(ss, torch.float32, seed=2)
    i = 2 if xs[dim] > 2 else 0
    got = run_static(lambda a, s: a.index_add(dim, tpo.const(i, dtype="int64"), s), x, src,
                     backend=backend)
    s = src if src.ndim == x.ndim else src.unsqueeze(dim)
    assert_same(got, x.index_add(dim, torch.tensor([i]), s))


def test_index_add_bad_source_shape_is_shape_error() -> None:
    from tempo.core.errors import ShapeError

    x, src = make_input((3, 4), torch.float32), make_input((3, 2), torch.float32)
    with pytest.raises(ShapeError):
        run_static(lambda a, s: a.index_add(1, tpo.const(1, dtype="int64"), s), x, src)


def test_expand_minus_one_keeps_the_size() -> None:
    """API.md §3.8: expand prepends 1-dims as needed and -1 keeps a dim (it raised)."""
    x = make_input((3, 1), torch.float32)
    got = run_static(lambda a: [a.expand((2, -1, 4)), a.expand((-1, 5))], x)
    assert_same(got, [x.expand(2, -1, 4), x.expand(-1, 5)])


@pytest.mark.parametrize("flag", ["enable_matmul_ops", "enable_index_ops"])
def test_optional_primitives_off_give_the_same_results(flag: str) -> None:
    """API.md §4.2: with enable_matmul_ops=False matmul is a multiply and a sum, with
    enable_index_ops=False index_select/index_add are gathers/scatters; same results as torch
    (the flags were read by no code)."""
    from tempo.api import TempoContext
    from tempo.core.configs import ExecutionConfig

    cfg = ExecutionConfig.test_cfg()
    setattr(cfg, flag, False)
    x, m = make_input((3, 4), torch.float32, 1), make_input((4, 2), torch.int64, 2)
    v, i = make_input((4,), torch.float32, 3), torch.tensor([2, 0, 2])
    ctx = TempoContext(cfg, num_dims=0)
    with ctx:
        a, b, c = tpo.const(x.numpy()), tpo.const(m.numpy()), tpo.const(v.numpy())
        ii = tpo.const(i.numpy())
        outs = [a @ b, c @ a.transpose(), a @ c, c @ c, a.index(1, ii), a.index(0, 1),
                a.index(1, tpo.const(3, dtype="int64")), a.index_add(1, ii, a[:, 0:3], alpha=2),
                c.index_add(0, tpo.const(1, dtype="int64"), tpo.const(5.0))]
        kinds = {op.name for op in ctx.sdg.ops.values()}
    assert ("matmul" not in kinds) if flag == "enable_matmul_ops" else \
        not kinds & {"index_select", "index_add"}
    exe = ctx.compile({})
    exe.execute()
    got = [exe.get_spatial_tensor_torch(o.tensor_id) for o in outs]
    want = [x @ m.float(), v @ x.T, x @ v, v @ v, x.index_select(1, i), x[1], x[:, 3],
            x.index_add(1, i, x[:, 0:3], alpha=2), v.index_add(0, torch.tensor([1]),
                                                               torch.tensor([5.0]))]
    assert_same(got, want, rtol=1e-5, atol=1e-5)
