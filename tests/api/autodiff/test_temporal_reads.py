"""Gradients through every temporal read pattern, boundaries included, against PyTorch on
the unrolled program (ARCHITECTURE §4, §8: the reversed relation keeps its conditions)."""

from __future__ import annotations

import pytest
import torch
from autodiff_harness import Prog, assert_close, rnd, torch_grads

from tempo.api import RecurrentTensor as RT
from tempo.core import index_expr as ie
from tempo.core.dtype import dtypes

N = 7


def _tT(p: Prog):  # noqa: N802
    return p.vb[0]


def test_shift_back_zero_at_start(backend: str) -> None:
    xs, cs = rnd(N, 3), rnd(N, 3, seed=1)
    p = Prog(1, backend)
    (t, T), = p.vb
    with p.ctx:
        x, c = p.leaf(xs, (t,)), p.source(cs, (t,))
        prev = RT.placeholder((3,), dtypes.float32, domain=(t,))
        prev[0] = RT.zeros((3,))
        prev[True] = x[t - 1]
        ((prev * c).tanh() * x).sum().backward()
    got = p.run({T: N})

    def ref(x: torch.Tensor) -> torch.Tensor:
        prev = torch.cat([torch.zeros(1, 3), x[:-1]])
        return ((prev * torch.tensor(cs)).tanh() * x).sum()

    assert_close(got, torch_grads(ref, xs))


def test_shift_forward_zero_at_end(backend: str) -> None:
    xs = rnd(N, 4)
    p = Prog(1, backend)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        nxt = RT.placeholder((4,), dtypes.float32, domain=(t,))
        nxt[t < T - 1] = x[t + 1]
        nxt[True] = RT.zeros((4,))
        (nxt * x.sin()).sum().backward()
    got = p.run({T: N})
    ref = torch_grads(lambda x: (torch.cat([x[1:], torch.zeros(1, 4)]) * x.sin()).sum(), xs)
    assert_close(got, ref)


def test_clamped_shift_max() -> None:
    xs = rnd(N, 3)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        (x[ie.max(t - 1, 0)] * x * x).sum().backward()
    got = p.run({T: N})
    ref = torch_grads(lambda x: (torch.cat([x[:1], x[:-1]]) * x * x).sum(), xs)
    assert_close(got, ref)


def test_clamped_shift_min() -> None:
    xs = rnd(N, 3)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        (x[ie.min(t + 2, T - 1)].exp() * x).sum().backward()
    got = p.run({T: N})
    idx = [min(i + 2, N - 1) for i in range(N)]
    ref = torch_grads(lambda x: (x[idx].exp() * x).sum(), xs)
    assert_close(got, ref)


@pytest.mark.parametrize("which", ["first", "last"])
def test_constant_point_reads(which: str) -> None:
    xs = rnd(N, 2)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        k = 0 if which == "first" else T - 1
        (x[k] * x).sigmoid().sum().backward()
    got = p.run({T: N})
    i = 0 if which == "first" else N - 1
    ref = torch_grads(lambda x: (x[i : i + 1] * x).sigmoid().sum(), xs)
    assert_close(got, ref)


def test_growing_slice() -> None:
    xs, cs = rnd(N, 3), rnd(N, 3, seed=2)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, c = p.leaf(xs, (t,)), p.source(cs, (t,))
        ((x[0 : t + 1] ** 2).sum(0) * c).sum().backward()
    got = p.run({T: N})
    ref = torch_grads(lambda x: sum(((x[: i + 1] ** 2).sum(0) * torch.tensor(cs[i])).sum()
                                    for i in range(N)), xs)
    assert_close(got, ref)


def test_shrinking_slice() -> None:
    xs = rnd(N, 3)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        (x[t:T].tanh().sum(0) * x).sum().backward()
    got = p.run({T: N})
    ref = torch_grads(lambda x: sum((x[i:].tanh().sum(0) * x[i]).sum() for i in range(N)), xs)
    assert_close(got, ref)


def test_window() -> None:
    xs = rnd(N, 2)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        w = x[ie.max(0, t - 2) : t + 1]
        (w.exp().sum(0).ln() * x).sum().backward()
    got = p.run({T: N})
    ref = torch_grads(lambda x: sum((x[max(0, i - 2) : i + 1].exp().sum(0).log() * x[i]).sum()
                                    for i in range(N)), xs)
    assert_close(got, ref)


def test_constant_slice_read_at_every_point() -> None:
    xs, cs = rnd(N, 3), rnd(N, 3, seed=3)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, c = p.leaf(xs, (t,)), p.source(cs, (t,))
        ((x[0:T] * c).exp().sum(0) * x).sum().backward()
    got = p.run({T: N})
    ref = torch_grads(lambda x: sum(((x * torch.tensor(cs[i])).exp().sum(0) * x[i]).sum()
                                    for i in range(N)), xs)
    assert_close(got, ref)


def test_full_slice_reduces_domain() -> None:
    xs = rnd(N, 3)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        x[0:T].softmax(0).max().backward()
    got = p.run({T: N})
    ref = torch_grads(lambda x: x.softmax(0).max(), xs)
    assert_close(got, ref)


def test_merge_branches_first_wins() -> None:
    xs = rnd(N, 3)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        y = RT.placeholder((3,), dtypes.float32, domain=(t,))
        y[t < 2] = x * 3.0
        y[t < 4] = x.exp()
        y[True] = x[ie.max(t - 4, 0)] * x
        y.sum().backward()
    got = p.run({T: N})

    def ref(x: torch.Tensor) -> torch.Tensor:
        rows = [x[i] * 3 if i < 2 else x[i].exp() if i < 4 else x[i - 4] * x[i] for i in range(N)]
        return torch.stack(rows).sum()

    assert_close(got, torch_grads(ref, xs))


@pytest.mark.parametrize("index_ops", [True, False])
@pytest.mark.parametrize("flat", [False, True])
def test_two_dim_window(backend: str, index_ops: bool, flat: bool) -> None:
    """A window over two dims, x[max(0, b-1):b+1, 0:t+1]: each point's adjoint picks its
    own element out of the readers' windows by an index over (b, t). With
    enable_index_ops=False that pick is a gather whose index is expanded to the readers'
    length T - t; the expand was recorded over (b,) alone (its input's domain), so it ran
    once per b with one t's length (BackendError from a reshape, accept6b failure 6)."""
    B, N = 3, 4
    xs = rnd(B, N, 3)
    p = Prog(2, backend, enable_index_ops=index_ops)
    (b, B_), (t, T) = p.vb
    with p.ctx:
        x = p.leaf(xs, (b, t))
        win = x[ie.max(0, b - 1) : b + 1, 0 : t + 1]
        z = win.flatten(0, 1).sin().sum(0) if flat else win.sin().sum((0, 1))
        (z * x).sum().backward()
    got = p.run({B_: B, T: N})

    def ref(x: torch.Tensor) -> torch.Tensor:
        return sum((x[max(0, i - 1) : i + 1, : j + 1].sin().sum((0, 1)) * x[i, j]).sum()
                   for i in range(B) for j in range(N))

    assert_close(got, torch_grads(ref, xs))


def test_index_ops_off_records_no_index_ops(backend: str) -> None:
    """enable_index_ops=False must mean no IndexSelect/IndexAdd op anywhere: the backward
    of a growing read x[0:t+1] placed its gradient back with an IndexAddOp (pad_back),
    as did the gradients of index_select, index_add and a replicate pad. Now they record
    scatter_add/gather as the flag says; gradients vs torch autograd."""
    from tempo.core import ops

    N = 4
    xs, ws = rnd(N, 3), rnd(5, 3)
    p = Prog(1, backend, enable_index_ops=False)
    ((t, T),) = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        w = p.leaf(ws)
        rows = w.index_select(0, RT.const([4, 0, 2]).cast(dtypes.int64))
        added = RT.zeros((5, 3)).index_add(0, RT.const([1, 3]).cast(dtypes.int64), w[0:2])
        padded = x.pad(((1, 1),), mode="replicate")
        z = (x[0 : t + 1] ** 2).sum(0) * rows.sum(0) + padded.sum() * added.sum(0)
        z.sum().backward()
    kinds = {type(op).__name__ for op in p.ctx.sdg.ops.values()}
    assert not kinds & {ops.IndexAddOp.__name__, ops.IndexSelectOp.__name__}, kinds
    got = p.run({T: N})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        rows = w[[4, 0, 2]].sum(0)
        added = torch.zeros(5, 3).index_add(0, torch.tensor([1, 3]), w[0:2]).sum(0)
        padded = [x[j].sum() + x[j, 0] + x[j, 2] for j in range(N)]
        return sum(((x[: j + 1] ** 2).sum(0) * rows + padded[j] * added).sum() for j in range(N))

    assert_close(got, torch_grads(ref, xs, ws))
