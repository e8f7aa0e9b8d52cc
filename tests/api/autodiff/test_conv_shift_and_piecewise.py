"""Conv gradients (strides, padding, dilation, groups, transposed), BPTT through shift-sugar
recurrences (the placeholder has T+1 points), piecewise lexicographic reads, pow's edge cases,
and the `_ctx` bookkeeping of API §3.7, all against PyTorch autograd."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from autodiff_harness import Prog, assert_close, rnd, torch_grads

from tempo.api import RecurrentTensor as RT
from tempo.core.dtype import dtypes

CONV = {
    "1d_stride_dilation_groups": dict(nd=1, sp=(9,), s=2, p=1, d=2, g=2, tr=False, op=0),
    "2d_stride_padding": dict(nd=2, sp=(7, 8), s=2, p=1, d=1, g=1, tr=False, op=0),
    "2d_transposed_groups": dict(nd=2, sp=(4, 5), s=2, p=1, d=2, g=2, tr=True, op=1),
}


@pytest.mark.parametrize("case", list(CONV))
def test_conv_rules(case: str) -> None:
    c: dict[str, Any] = CONV[case]
    nd, g, cin, cout = c["nd"], c["g"], 4, 6
    xs = rnd(2, 2, cin, *c["sp"]) * 0.3  # (t, N, C, *sp): a conv at every t, one weight
    wshape = (cin, cout // g) if c["tr"] else (cout, cin // g)
    ws = rnd(*wshape, *(3,) * nd, seed=3) * 0.3
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, w = p.leaf(xs, (t,)), p.leaf(ws)
        y = x.conv_general(w, nd, c["s"], c["p"], c["d"], c["tr"], c["op"], g)
        (y.sin() * y).sum().backward()
    got = p.run({T: 2})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        xf = x.flatten(0, 1)
        if c["tr"]:
            f = (F.conv_transpose1d, F.conv_transpose2d)[nd - 1]
            y = f(xf, w, stride=c["s"], padding=c["p"], output_padding=c["op"], groups=g,
                  dilation=c["d"])
        else:
            f = (F.conv1d, F.conv2d)[nd - 1]
            y = f(xf, w, stride=c["s"], padding=c["p"], dilation=c["d"], groups=g)
        return (y.sin() * y).sum()

    assert_close(got, torch_grads(ref, xs, ws), atol=1e-4)


def test_bptt_shift_sugar_50_steps() -> None:
    """`h[t+1] = tanh(W h + x[t] @ U)`: h has T+1 points; the loss reads all of them."""
    n, d = 50, 4
    xs, ws, us = rnd(n, 3), rnd(d, d, seed=1) * 0.5, rnd(3, d, seed=2)
    cs = rnd(n, d, seed=3)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, w, u, c = p.leaf(xs, (t,)), p.leaf(ws), p.leaf(us), p.source(cs, (t,))
        h = RT.placeholder((d,), dtypes.float32, domain=(t,))
        h[0] = RT.zeros((d,))
        h[t + 1] = (w @ h + x[t] @ u).tanh()
        ((h[t + 1] * c).sum() + (h[0 : T + 1] ** 2).sum()).backward()
    got = p.run({T: n})

    def ref(x: torch.Tensor, w: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        hs = [torch.zeros(d)]
        for i in range(n):
            hs.append((w @ hs[-1] + x[i] @ u).tanh())
        s = torch.stack(hs)
        return (s[1:] * torch.tensor(cs)).sum() + n * (s**2).sum()

    assert_close(got, torch_grads(ref, xs, ws, us), atol=1e-4)


def test_shift_sugar_nested_b_t_and_last_point() -> None:
    nb, nt = 2, 5
    xs, ws = rnd(nb, nt, 3), rnd(3, seed=4)
    p = Prog(2)
    (b, B), (t, T) = p.vb
    with p.ctx:
        x, w = p.leaf(xs, (b, t)), p.leaf(ws)
        o = RT.placeholder((3,), dtypes.float32, domain=(b, t))
        o[b, 0] = x[b, 0]
        o[b, t + 1] = (o * w + x).sin()
        (o.sum() + (o[b, T] * o[b, T]).sum()).backward()
    got = p.run({B: nb, T: nt})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        total = torch.zeros(())
        for i in range(nb):
            a = x[i, 0]
            for j in range(nt):
                total = total + a.sum()
                a = (a * w + x[i, j]).sin()
            total = total + nt * (a * a).sum()  # o[b, T] read at each of the T points
        return total

    assert_close(got, torch_grads(ref, xs, ws), atol=1e-4)


def test_piecewise_lexicographic_reads() -> None:
    """`x.previous` / `x.next_` over (b, t) wrap across b and around the origin."""
    nb, nt = 3, 4
    xs = rnd(nb, nt, 3)
    p = Prog(2)
    (b, B), (t, T) = p.vb
    with p.ctx:
        x = p.leaf(xs, (b, t))
        (x.previous * x.next_.sin() * x).sum().backward()
    got = p.run({B: nb, T: nt})

    def ref(x: torch.Tensor) -> torch.Tensor:
        xf = x.reshape(-1, 3)
        return (torch.roll(xf, 1, 0) * torch.roll(xf, -1, 0).sin() * xf).sum()

    assert_close(got, torch_grads(ref, xs))


def test_pow_edge_cases() -> None:
    """torch's conventions: d/da is 0 where b == 0; d/db is 0 where a == 0 and b >= 0."""
    a_s = np.array([[0.0, 0.0, 2.0, 1.5], [0.0, 3.0, 0.5, 1.0]], np.float32)
    b_s = np.array([0.0, 2.0, 0.0, -1.5], np.float32)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        a, bb = p.leaf(a_s, (t,)), p.leaf(b_s)
        (a**bb).sum().backward()
    got = p.run({T: 2})
    assert_close(got, torch_grads(lambda a, b: (a**b).sum(), a_s, b_s))


def test_ctx_cleared_after_backward_and_reuse() -> None:
    """API §3.7: intermediates lose `_ctx` after backward, yet stay non-leaves: a second
    backward through the same (sliced) intermediate still reaches the real leaves."""
    xs, ws = rnd(4, 3), rnd(3, seed=6)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, w = p.leaf(xs, (t,)), p.leaf(ws)
        y = (x * w).tanh()
        assert y._ctx is not None
        (y * y).sum().backward()
        assert y._ctx is None and y.requires_grad is True and y.grad is not None
        y[0:T].exp().sum().backward()
        p.leaves.append(y)  # an intermediate's `.grad` is its accumulated adjoint
    got = p.run({T: 4})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y = (x * w).tanh()
        return (y * y).sum() + y.exp().sum()

    want = torch_grads(ref, xs, ws)
    yt = (torch.tensor(xs) * torch.tensor(ws)).tanh()
    assert_close(got, [*want, 2 * yt + yt.exp()])
