"""Reductions, scans, sort and softmax-like ops vs torch eager, incl. negative dims."""

from __future__ import annotations

import pytest
import torch
from op_harness import assert_same, make_input, run_static

import tempo.api.recurrent_tensor as tpo
from tempo.core.errors import TempoError

SHAPES = [(5,), (3, 4), (2, 3, 2, 2)]
DTYPES = [torch.bool, torch.int64, torch.float32, torch.float64]


def _f(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype.is_floating_point else x.float()


def _dims(shape: tuple) -> list:
    return [None, -1, 0] + ([(0, -1)] if len(shape) > 1 else [])


def _all(d: object, x: torch.Tensor) -> tuple:
    return tuple(range(x.ndim)) if d is None else d


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sum_mean_std(shape: tuple, dtype: torch.dtype) -> None:
    x = make_input(shape, dtype, seed=4)
    for d in _dims(shape):
        got = run_static(lambda a, d=d: [a.sum(d), a.sum(d, keepdim=True), a.mean(d), a.std(d),
                                    a.std(d, correction=0)], x)
        dd = _all(d, x)
        want = [x.sum(dd), x.sum(dd, keepdim=True), _f(x).mean(dd), _f(x).std(dd),
                _f(x).std(dd, correction=0)]
        assert_same(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), *SHAPES], ids=str)
def test_max_min_arg(shape: tuple, dtype: torch.dtype) -> None:
    x = make_input(shape, dtype, seed=5, special=True)
    got = run_static(lambda a: [a.max(), a.min(), a.argmax(), a.argmin()], x)
    xi = x.int() if dtype == torch.bool else x  # torch has no bool argmax; same order as int
    want = [x.max(), x.min(), xi.flatten().argmax(), xi.flatten().argmin()]
    assert_same(got, want)
    for d in ([-1, 0] if shape else []):
        got = run_static(lambda a, d=d: [a.max(d), a.min(d, keepdim=True), a.argmax(d)], x)
        want = [tuple(x.max(d)), tuple(x.min(d, keepdim=True)), xi.argmax(d)]
        assert_same(got, want)


def test_max_elementwise_over_tensors() -> None:
    x, y = make_input((3, 4), torch.float32, 1), make_input((4,), torch.float32, 2)
    vals, idx = run_static(lambda a, b: tpo.max(a, b), x, y)
    assert_same(vals, torch.maximum(x, y))
    assert_same(idx, (y > x).long())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_cumsum_cumprod(shape: tuple, dtype: torch.dtype) -> None:
    x = make_input(shape, dtype, seed=6)
    if dtype.is_floating_point:
        x.view(-1)[1] = 0.0  # a zero must zero the rest of the product
    for d in (-1, 0):
        got = run_static(lambda a, d=d: [a.cumsum(d), a.cumprod(d)], x)
        assert_same(got, [x.cumsum(d), x.cumprod(d)], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_logsumexp_softmax_lnorm(shape: tuple, dtype: torch.dtype) -> None:
    x = make_input(shape, dtype, seed=7)
    got = run_static(lambda a: [a.logsumexp(), a.logsumexp(-1, keepdim=True), a.softmax(0),
                                a.l_norm(2), a.l_norm(1, -1), a.l_norm(3, 0)], x)
    xf = _f(x)
    want = [xf.logsumexp(tuple(range(x.ndim))), xf.logsumexp(-1, keepdim=True),
            xf.softmax(0), xf.norm(2), xf.norm(1, -1), xf.norm(3, 0)]
    assert_same(got, want, rtol=1e-5, atol=1e-5)


def test_logsumexp_infinities() -> None:
    x = torch.tensor([[float("-inf"), float("-inf")], [0.0, float("-inf")], [1.0, float("inf")]])
    assert_same(run_static(lambda a: a.logsumexp(-1), x), x.logsumexp(-1))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), *SHAPES], ids=str)
def test_sort_bit_exact(shape: tuple, dtype: torch.dtype) -> None:
    x = make_input(shape, dtype, seed=8)  # ints and bools have ties: stable order matters
    for d in ([-1, 0] if shape else [0]):
        for desc in (False, True):
            got = run_static(lambda a, d=d, desc=desc: a.sort(d, descending=desc, stable=True), x)
            assert_same(got, tuple(torch.sort(x, dim=d, descending=desc, stable=True)))


def test_discounted_sums() -> None:
    x = make_input((5, 3), torch.float32, seed=9)
    g = 0.9
    w = g ** torch.arange(5, dtype=torch.float32)
    got = run_static(lambda a: [a.discounted_sum(g), a.discounted_cum_sum(g, 0)], x)
    cum = torch.stack([(x[k:] * w[: 5 - k, None]).sum(0) for k in range(5)])
    assert_same(got, [(x * w[:, None]).sum(0), cum], rtol=1e-5, atol=1e-5)


def test_bad_dim_is_tempo_error() -> None:
    with pytest.raises(TempoError):
        run_static(lambda a: a.sum(3), make_input((3, 4), torch.float32))


def test_discounted_sums_with_tensor_gamma() -> None:
    """gamma may be a RecurrentTensor (it crashed in const); same values as a float gamma."""
    x = make_input((5, 3), torch.float32, seed=9)
    g = torch.tensor(0.8)
    got = run_static(lambda a, gm: [a.discounted_sum(gm), a.discounted_cum_sum(gm, 0)], x, g)
    w = g ** torch.arange(5, dtype=torch.float32)
    cum = torch.stack([(x[k:] * w[: 5 - k, None]).sum(0) for k in range(5)])
    assert_same(got, [(x * w[:, None]).sum(0), cum], rtol=1e-5, atol=1e-5)


def test_torch_spelling_dim_of_sum_mean_std() -> None:
    """`x.sum(dim=0)` is what a PyTorch user types first: the same as `dims=` (it raised
    'unexpected keyword argument dim'); both at once is an error at the user's line."""
    x = make_input((3, 4), torch.float32, seed=7)
    got = run_static(lambda a: [a.sum(dim=0), a.mean(dim=-1, keepdim=True), a.std(dim=0),
                                tpo.sum(a, dim=(0, 1)), tpo.var(a, dim=1, correction=0)], x)
    want = [x.sum(0), x.mean(-1, keepdim=True), x.std(0), x.sum((0, 1)), x.var(1, correction=0)]
    assert_same(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(TempoError, match="dims, dim .* and axis"):
        run_static(lambda a: [a.sum(0, dim=1)], x)


def test_numpy_spelling_axis() -> None:
    """`x.softmax(axis=0)`, `x.sum(axis=0)` (numpy's and jax's keyword) raised a plain
    TypeError 'unexpected keyword argument axis': the same as `dim=` (vs torch); `dim` and
    `axis` both given is an error at the user's line."""
    x = make_input((3, 4), torch.float32, seed=8)
    got = run_static(lambda a: [a.softmax(axis=0), a.log_softmax(axis=0), tpo.softmax(a, axis=1),
                                a.sum(axis=1), a.mean(axis=0, keepdim=True), a.std(axis=0),
                                tpo.var(a, axis=1, correction=0)], x)
    want = [x.softmax(0), x.log_softmax(0), x.softmax(1), x.sum(1), x.mean(0, keepdim=True),
            x.std(0), x.var(1, correction=0)]
    assert_same(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(TempoError, match=r"softmax\(\) takes dim or axis(.|\n)*test_reduce_ops"):
        run_static(lambda a: [a.softmax(0, axis=1)], x)
    with pytest.raises(TempoError, match="dims, dim .* and axis"):
        run_static(lambda a: [a.sum(dim=0, axis=1)], x)
