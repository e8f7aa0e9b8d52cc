"""Parameters (leaves without a domain, or over an outer iteration dim) read inside
recurrences: their gradient sums over every step of the unrolled program, base case and
recursive branch alike, and must equal PyTorch autograd on that unrolled program (issue 9)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from autodiff_harness import Prog, assert_close, recurrence, rnd, torch_grads

from tempo.api import RecurrentTensor as RT
from tempo.core import index_expr as ie
from tempo.core.dtype import dtypes

N = 6


def _scalar(v: float) -> np.ndarray:
    return np.array(v, dtype=np.float32)


def test_scalar_param_in_recurrence(backend: str) -> None:
    """The issue's program: `w` read in the base case and in the recursive branch."""
    vs = rnd(N, 3)
    p, t, T, v, w, h = recurrence(backend, vs, 0.7, x_leaf=False)
    with p.ctx:
        h[0] = w * v[0]
        h[True] = (w * h[t - 1] + v).tanh()
        h[T - 1].sum().backward()
    got = p.run({T: N})

    def ref(w: torch.Tensor) -> torch.Tensor:
        v = torch.tensor(vs)
        h = w * v[0]
        for k in range(1, N):
            h = (w * h + v[k]).tanh()
        return h.sum()

    assert_close(got, torch_grads(ref, _scalar(0.7)))


def test_vector_and_matrix_params_in_both_branches(backend: str) -> None:
    """A vector `u` (elementwise) and a matrix `m` (matmul) in the base case and the
    recursive branch, plus a leaf input over t; the loss reads every step."""
    xs, us, ms = rnd(N, 4), rnd(4, seed=1), rnd(4, 4, seed=2) * 0.5
    p = Prog(1, backend)
    (t, T), = p.vb
    with p.ctx:
        x, u, m = p.leaf(xs, (t,)), p.leaf(us), p.leaf(ms)
        h = RT.placeholder((4,), dtypes.float32, domain=(t,))
        h[0] = (x @ m * u).sigmoid()
        h[True] = (h[t - 1] @ m + x * u).tanh()
        (h * h).sum().backward()
    got = p.run({T: N})

    def ref(x: torch.Tensor, u: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        h = (x[0] @ m * u).sigmoid()
        total = (h * h).sum()
        for k in range(1, N):
            h = (h @ m + x[k] * u).tanh()
            total = total + (h * h).sum()
        return total

    assert_close(got, torch_grads(ref, xs, us, ms))


@pytest.mark.parametrize("prev", [False, True])
def test_param_over_outer_dim_in_inner_recurrence(backend: str, prev: bool) -> None:
    """`w` over (i,) (one value per iteration) used by a recurrence over (i, t): each
    iteration's loss gives the gradient of that iteration's `w` only; with `prev` the
    recursive branch also reads the previous iteration's `w[max(i-1, 0)]`."""
    ni = 3
    vs, ws = rnd(ni, N, 2), rnd(ni, seed=3) * 0.5
    p = Prog(2, backend)
    (i, I), (t, T) = p.vb
    with p.ctx:
        v, w = p.source(vs, (i, t)), p.leaf(ws, (i,))
        h = RT.placeholder((2,), dtypes.float32, domain=(i, t))
        h[i, 0] = (w * v).sin()
        wr = w[ie.max(i - 1, 0)] if prev else w
        h[True] = (wr * h[i, t - 1] + w * v).tanh()
        h[i, T - 1].sum().backward()
    got = p.run({I: ni, T: N})

    def ref(w: torch.Tensor) -> torch.Tensor:
        v = torch.tensor(vs)
        wr = torch.cat([w[:1], w[:-1]]) if prev else w
        h = (w[:, None] * v[:, 0]).sin()
        for k in range(1, N):
            h = (wr[:, None] * h + w[:, None] * v[:, k]).tanh()
        return h.sum()

    assert_close(got, torch_grads(ref, ws))


def test_scalar_param_trained_over_outer_dim(backend: str) -> None:
    """SGD on a scalar parameter over i, each iteration a BPTT over t: the parameter after
    every iteration matches torch's (the gradient of iteration i-1 updates iteration i)."""
    ni, lr = 4, 0.1
    vs = rnd(N, 2) * 0.5
    p = Prog(2, backend)
    (i, I), (t, T) = p.vb
    with p.ctx:
        v = p.source(vs, (t,))
        w = RT.placeholder((), dtypes.float32, domain=(i,), requires_grad=True)
        w[0] = RT.const(0.9)
        h = RT.placeholder((2,), dtypes.float32, domain=(i, t))
        h[i, 0] = w * v
        h[True] = (w * h[i, t - 1] + v).tanh()
        (h[i, T - 1] ** 2).sum().backward()
        grad = w.grad
        assert grad is not None
        w[True] = w[i - 1].detach() - lr * grad[i - 1]
    exe = p.ctx.compile({I: ni, T: N})
    exe.execute()
    got = exe.get_spatial_tensor_torch(w.tensor_id, (slice(None),)).detach().cpu()

    want, wt = [], torch.tensor(0.9, requires_grad=True)
    for _ in range(ni):
        want.append(wt.detach().clone())
        v = torch.tensor(vs)
        h = wt * v[0]
        for k in range(1, N):
            h = (wt * h + v[k]).tanh()
        (gw,) = torch.autograd.grad((h**2).sum(), wt)
        wt = (wt - lr * gw).detach().requires_grad_(True)
    assert_close([got], [torch.stack(want)])


@pytest.mark.parametrize("cross", [False, True])
def test_scalar_param_nested_b_t(backend: str, cross: bool) -> None:
    """A scalar parameter in a recurrence over t run per b: the gradient sums over b too;
    with `cross` each b reads the mean over all b of the previous step."""
    nb = 3
    xs, ws = rnd(nb, N, 2), _scalar(-0.6)
    p = Prog(2, backend)
    (b, B), (t, T) = p.vb
    with p.ctx:
        x, w = p.source(xs, (b, t)), p.leaf(ws)
        s = RT.placeholder((2,), dtypes.float32, domain=(b, t))
        s[b, 0] = x.tanh()
        prev = s[0:B, t - 1].mean(0) if cross else s[b, t - 1]
        s[True] = (w * prev + x).tanh()
        (s[0:B, T - 1] ** 2).sum().backward()
    got = p.run({B: nb, T: N})

    def ref(w: torch.Tensor) -> torch.Tensor:
        x = torch.tensor(xs)
        s = x[:, 0].tanh()
        for k in range(1, N):
            s = (w * (s.mean(0) if cross else s) + x[:, k]).tanh()
        return (s**2).sum()

    assert_close(got, torch_grads(ref, ws))


def test_window_read_inside_recurrence(backend: str) -> None:
    """`x[max(0, t-2):t+1]` feeds the recurrence next to a parameter."""
    xs = rnd(N, 3)
    p, t, T, x, w, h = recurrence(backend, xs, 0.5)
    with p.ctx:
        h[0] = x.tanh()
        h[True] = (w * h[t - 1] + x[ie.max(0, t - 2) : t + 1].sum(0)).tanh()
        h.sum().backward()
    got = p.run({T: N})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = x[0].tanh()
        total = h.sum()
        for k in range(1, N):
            h = (w * h + x[max(0, k - 2) : k + 1].sum(0)).tanh()
            total = total + h.sum()
        return total

    assert_close(got, torch_grads(ref, xs, _scalar(0.5)))


def test_suffix_slice_read_inside_recurrence(backend: str) -> None:
    """`x[t:T]` (what is left of the sequence) feeds the recurrence."""
    xs = rnd(N, 2) * 0.5
    p, t, T, x, w, h = recurrence(backend, xs, 0.8)
    with p.ctx:
        h[0] = x[t:T].mean(0)
        h[True] = (w * h[t - 1] + x[t:T].sum(0) * w).tanh()
        h[T - 1].sum().backward()
    got = p.run({T: N})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = x.mean(0)
        for k in range(1, N):
            h = (w * h + x[k:].sum(0) * w).tanh()
        return h.sum()

    assert_close(got, torch_grads(ref, xs, _scalar(0.8)))


def test_reversed_time_read_and_backward_recurrence(backend: str) -> None:
    """Returns computed backwards in time (`r[t] = x[t] + g*r[t+1]`) with a parameter `g`,
    and a forward recurrence reading the input at `T-1-t`."""
    xs, gs = rnd(N, 2), _scalar(0.9)
    p = Prog(1, backend)
    (t, T), = p.vb
    with p.ctx:
        x, g = p.leaf(xs, (t,)), p.leaf(gs)
        r = RT.placeholder((2,), dtypes.float32, domain=(t,))
        r[T - 1] = x
        r[True] = x + g * r[t + 1]
        f = RT.placeholder((2,), dtypes.float32, domain=(t,))
        f[0] = x[T - 1]
        f[True] = (g * f[t - 1] + x[T - 1 - t]).tanh()
        ((r * r).sum() + f[T - 1].sum()).backward()
    got = p.run({T: N})

    def ref(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        rs = [x[N - 1]]
        for k in range(N - 2, -1, -1):
            rs.append(x[k] + g * rs[-1])
        f = x[N - 1]
        for k in range(1, N):
            f = (g * f + x[N - 1 - k]).tanh()
        # `f[T-1].sum()` is over () and is added to the loss at each of the N points of t
        return sum((r * r).sum() for r in rs) + N * f.sum()

    assert_close(got, torch_grads(ref, xs, gs))


def test_constant_slices_inside_recurrence(backend: str) -> None:
    """Constant-range slices (`x[0:3]`, `x[2:T]`, `x[T-2:T]`) read at every step of a
    recurrence over t, and one read once from a program over ()."""
    xs = rnd(N, 2) * 0.5
    p, t, T, x, w, h = recurrence(backend, xs, 0.7)
    with p.ctx:
        h[0] = x[0:3].sum(0) * w
        h[True] = (w * h[t - 1] + x[2:T].mean(0) - x[T - 2 : T].sum(0) * x).tanh()
        (h.sum() + x[1:4].exp().sum()).backward()
    got = p.run({T: N})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = x[0:3].sum(0) * w
        total = h.sum() + N * x[1:4].exp().sum()
        for k in range(1, N):
            h = (w * h + x[2:].mean(0) - x[N - 2 :].sum(0) * x[k]).tanh()
            total = total + h.sum()
        return total

    assert_close(got, torch_grads(ref, xs, _scalar(0.7)))


def test_placeholders_read_before_their_branches_are_assigned() -> None:
    """accept6b c04: `p[i+1] = p + h[i, 0:B, T-1].mean(0)` recorded before h's branches read
    the leaf s, and the loss reads only placeholders (c from p): the requires_grad flags
    fixed at record time were stale (None), so backward() raised GradientError 'no tensor it
    is computed from was made with requires_grad=True'. The graph decides now."""
    pr = Prog(2)
    (i, I_), (t, T_) = pr.vb
    xs = rnd(3, 4)
    with pr.ctx:
        s = pr.leaf(np.array(0.7, np.float32))
        x = RT.const(xs).index(0, i).index(0, t)
        h = RT.placeholder((), dtypes.float32, domain=(i, t))
        p = RT.placeholder((), dtypes.float32, domain=(i,))
        p[0] = RT.const(1.0)
        p[i + 1] = p + h[i, T_ - 1]          # h has no branch yet
        c = p * 2.0
        h[i, 0] = p
        h[i, t + 1] = 0.5 * h + x[i, t + 1] * s
        c[0:I_].sum(0).backward()
    got = pr.run({I_: 3, T_: 4})

    def ref(s: torch.Tensor) -> torch.Tensor:
        p, tot = torch.tensor(1.0), 0.0
        for ii in range(3):
            tot = tot + 2.0 * p
            h = p
            for tt in range(1, 4):
                h = 0.5 * h + float(xs[ii, tt]) * s
            p = p + h
        return tot

    assert_close(got, torch_grads(ref, _scalar(0.7)))
