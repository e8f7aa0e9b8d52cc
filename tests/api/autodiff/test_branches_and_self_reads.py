"""Gradients where a recurrence branch is not taken, and recurrences that read their own
past or future through slices, windows, clamps, quasi-affine and cross-batch reads (issue 9's
siblings), each against PyTorch autograd on the unrolled program."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from autodiff_harness import Prog, assert_close, recurrence, rnd, torch_grads

from tempo.api import RecurrentTensor as RT
from tempo.core import index_expr as ie
from tempo.core.dtype import dtypes
from tempo.core.errors import IndexExprError

N = 6
W0 = np.array(0.6, dtype=np.float32)


@pytest.mark.parametrize("fn", ["sqrt", "ln"])
def test_untaken_branch_does_not_poison_gradient(backend: str, fn: str) -> None:
    """`y[True] = sqrt(x)` / `ln(x)` is taken from t=1 on; at t=0, where x is negative
    or zero, the forward never computes it, and its gradient rule must not either: 0 * NaN
    would make x.grad[0] NaN (torch's unrolled program has no such term)."""
    xs = np.abs(rnd(N, 2)) + 1.0
    xs[0] = -xs[0] if fn == "sqrt" else 0.0
    p = Prog(1, backend)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        y = RT.placeholder((2,), dtypes.float32, domain=(t,))
        y[0] = x * 2.0
        y[True] = getattr(x, fn)() * 3.0
        y.sum().backward()
    got = p.run({T: N})
    tfn = torch.sqrt if fn == "sqrt" else torch.log
    assert_close(got, torch_grads(lambda x: (x[0] * 2).sum() + (tfn(x[1:]) * 3).sum(), xs))


def _run(p: Prog, bounds: dict, ref: object, *arrays: np.ndarray) -> None:
    assert_close(p.run(bounds), torch_grads(ref, *arrays))


def test_recurrence_reads_mean_of_its_own_past(backend: str) -> None:
    """`h[0:t].mean(0)` has no elements at t=0, where the base case is taken instead."""
    xs = rnd(N, 2) * 0.5
    p, t, T, x, w, h = recurrence(backend, xs, float(W0))
    with p.ctx:
        h[0] = x.tanh()
        h[True] = (w * h[0:t].mean(0) + x).tanh()
        h.sum().backward()

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        hs = [x[0].tanh()]
        for k in range(1, N):
            hs.append((w * torch.stack(hs).mean(0) + x[k]).tanh())
        return torch.stack(hs).sum()

    _run(p, {T: N}, ref, xs, W0)


def test_recurrence_reads_sum_of_its_own_future(backend: str) -> None:
    """Backwards in time: `r[t] = tanh(w * r[t+1:T].sum(0) + x)`, empty at t = T-1."""
    xs = rnd(N, 2) * 0.5
    p, t, T, x, w, r = recurrence(backend, xs, float(W0))
    with p.ctx:
        r[T - 1] = x
        r[True] = (w * r[t + 1 : T].sum(0) + x).tanh()
        r.sum().backward()

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        rs: list[torch.Tensor] = [x[N - 1]]
        for k in range(N - 2, -1, -1):
            rs.insert(0, (w * torch.stack(rs).sum(0) + x[k]).tanh())
        return torch.stack(rs).sum()

    _run(p, {T: N}, ref, xs, W0)


def test_recurrence_reads_window_of_its_own_past(backend: str) -> None:
    xs = rnd(N, 2) * 0.5
    p, t, T, x, w, h = recurrence(backend, xs, float(W0))
    with p.ctx:
        h[0] = x.tanh()
        h[True] = (w * h[ie.max(0, t - 2) : t].sum(0) + x).tanh()
        h.sum().backward()

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        hs = [x[0].tanh()]
        for k in range(1, N):
            hs.append((w * torch.stack(hs[max(0, k - 2) : k]).sum(0) + x[k]).tanh())
        return torch.stack(hs).sum()

    _run(p, {T: N}, ref, xs, W0)


def test_two_step_recurrence(backend: str) -> None:
    xs = rnd(N, 2) * 0.5
    p, t, T, x, w, h = recurrence(backend, xs, float(W0))
    with p.ctx:
        h[t < 2] = x.tanh()
        h[True] = (w * h[t - 2] + h[t - 1] * x).tanh()
        h[T - 1].sum().backward()

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        hs = [x[0].tanh(), x[1].tanh()]
        for k in range(2, N):
            hs.append((w * hs[k - 2] + hs[k - 1] * x[k]).tanh())
        return hs[-1].sum()

    _run(p, {T: N}, ref, xs, W0)


def test_clamped_lookahead_in_backward_recurrence(backend: str) -> None:
    xs = rnd(N, 2)
    p, t, T, x, w, r = recurrence(backend, xs, float(W0))
    with p.ctx:
        r[T - 1] = x
        r[True] = (w * r[ie.min(t + 1, T - 1)] + x[ie.min(t + 2, T - 1)]).tanh()
        r[0].sum().backward()

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        r = x[N - 1]
        for k in range(N - 2, -1, -1):
            r = (w * r + x[min(k + 2, N - 1)]).tanh()
        return r.sum()

    _run(p, {T: N}, ref, xs, W0)


def test_half_rate_read_in_recurrence(backend: str) -> None:
    """`x[t // 2]`: each x point is read by two consecutive steps."""
    xs = rnd(N, 2)
    p, t, T, x, w, h = recurrence(backend, xs, float(W0))
    with p.ctx:
        h[0] = x
        h[True] = (w * h[t - 1] + x[t // 2]).tanh()
        h[T - 1].sum().backward()

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = x[0]
        for k in range(1, N):
            h = (w * h + x[k // 2]).tanh()
        return h.sum()

    _run(p, {T: N}, ref, xs, W0)


def test_strided_read_is_a_clear_error() -> None:
    """`x[t % 2]` is read by every other point: not a contiguous range, so autodiff says
    which read at which line it cannot differentiate (never a wrong gradient)."""
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(rnd(N, 2), (t,))
        y = x[t % 2] * x
        with pytest.raises(IndexExprError, match="contiguous") as info:
            y.sum().backward()
    assert "y = x[t % 2] * x" in str(info.value)
