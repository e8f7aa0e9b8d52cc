"""Backprop through time, nested dims, model chains (matmul, softmax, attention), params
used at every (b, t), and the API semantics: detach, tri-state flags, accumulation."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from autodiff_harness import Prog, assert_close, rnd, torch_grads

from tempo.api import RecurrentTensor as RT
from tempo.core.dtype import dtypes


def test_bptt_rnn_50_steps(backend: str) -> None:
    n, h = 50, 4
    xs, ws, us, h0s = rnd(n, 3), rnd(h, h, seed=1) * 0.5, rnd(3, h, seed=2), rnd(h, seed=3)
    p = Prog(1, backend)
    (t, T), = p.vb
    with p.ctx:
        x, w, u, h0 = p.leaf(xs, (t,)), p.leaf(ws), p.leaf(us), p.leaf(h0s)
        hid = RT.placeholder((h,), dtypes.float32, domain=(t,))
        hid[0] = (h0 + x @ u).tanh()
        hid[True] = (hid[t - 1] @ w + x @ u).tanh()
        (hid * hid).sum().backward()
    t0 = time.perf_counter()
    got = p.run({T: n})
    assert time.perf_counter() - t0 < 60

    def ref(x: torch.Tensor, w: torch.Tensor, u: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        hs, prev = [], None
        for i in range(n):
            prev = (h0 + x[i] @ u).tanh() if prev is None else (prev @ w + x[i] @ u).tanh()
            hs.append(prev)
        return (torch.stack(hs) ** 2).sum()

    assert_close(got, torch_grads(ref, xs, ws, us, h0s))


def test_bptt_shift_sugar_extends_domain() -> None:
    n = 6
    xs, ws = rnd(n, 3), rnd(3, seed=4)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, w = p.leaf(xs, (t,)), p.leaf(ws)
        acc = RT.placeholder((3,), dtypes.float32, domain=(t,))
        acc[0] = RT.zeros((3,))
        acc[t + 1] = (acc * w + x).sin()
        acc.sum().backward()
    got = p.run({T: n})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        # acc has T+1 points, but `acc.sum()` is a new op over the default domain t < T
        # (API §3.5: only the placeholder's bound is overridden), so acc[T] is not in the loss.
        a, total = torch.zeros(3), torch.zeros(())
        for i in range(n):
            total = total + a.sum()
            a = (a * w + x[i]).sin()
        return total

    assert_close(got, torch_grads(ref, xs, ws))


def test_nested_dims_param_at_every_b_t() -> None:
    nb, nt = 3, 5
    xs, ws, bs = rnd(nb, nt, 4), rnd(4, 2, seed=5), rnd(2, seed=6)
    p = Prog(2)
    (b, B), (t, T) = p.vb
    with p.ctx:
        x, w, bias = p.leaf(xs, (b, t)), p.leaf(ws), p.leaf(bs)
        ((x @ w + bias).relu() ** 2).sum().backward()
    got = p.run({B: nb, T: nt})
    assert_close(got, torch_grads(lambda x, w, b: ((x @ w + b).relu() ** 2).sum(), xs, ws, bs))


def test_nested_recurrence_over_t_per_b() -> None:
    nb, nt = 2, 6
    xs, ws = rnd(nb, nt, 3), rnd(3, 3, seed=7) * 0.5
    p = Prog(2)
    (b, B), (t, T) = p.vb
    with p.ctx:
        x, w = p.leaf(xs, (b, t)), p.leaf(ws)
        s = RT.placeholder((3,), dtypes.float32, domain=(b, t))
        s[b, 0] = x
        s[True] = (s[b, t - 1] @ w).tanh() + x
        last = s[0:B, T - 1]
        (last * last).sum().backward()
    got = p.run({B: nb, T: nt})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        s = x[:, 0]
        for i in range(1, nt):
            s = (s @ w).tanh() + x[:, i]
        return (s * s).sum()

    assert_close(got, torch_grads(ref, xs, ws))


def test_matmul_softmax_chain() -> None:
    nt = 4
    xs, ws, ys = rnd(nt, 2, 5), rnd(5, 6, seed=8), rnd(nt, 2, 6, seed=9)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, w, y = p.leaf(xs, (t,)), p.leaf(ws), p.source(ys, (t,))
        probs = (x @ w).softmax(-1)
        (-(probs.ln() * y.softmax(-1)).sum()).backward()
    got = p.run({T: nt})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return -((x @ w).softmax(-1).log() * torch.tensor(ys).softmax(-1)).sum()

    assert_close(got, torch_grads(ref, xs, ws))


def test_causal_attention_over_time() -> None:
    nt, d = 6, 4
    xs = rnd(nt, d)
    wq, wk, wv = rnd(d, d, seed=10), rnd(d, d, seed=11), rnd(d, d, seed=12)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, q_w, k_w, v_w = p.leaf(xs, (t,)), p.leaf(wq), p.leaf(wk), p.leaf(wv)
        q, k, v = x @ q_w, x @ k_w, x @ v_w
        att = ((k[0 : t + 1] @ q) / 2.0).softmax(0)
        out = (att.unsqueeze(1) * v[0 : t + 1]).sum(0)
        (out * out).sum().backward()
    got = p.run({T: nt})

    def ref(x: torch.Tensor, wq: torch.Tensor, wk: torch.Tensor, wv: torch.Tensor) -> torch.Tensor:
        q, k, v = x @ wq, x @ wk, x @ wv
        mask = torch.triu(torch.ones(nt, nt, dtype=torch.bool), 1)
        a = ((q @ k.T) / 2.0).masked_fill(mask, float("-inf")).softmax(-1)
        o = a @ v
        return (o * o).sum()

    assert_close(got, torch_grads(ref, xs, wq, wk, wv))


def test_normalisation_chain() -> None:
    xs, gs = rnd(3, 2, 6), rnd(6, seed=13)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, g = p.leaf(xs, (t,)), p.leaf(gs)
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        y = (x - mu) / (var + 1e-5).sqrt() * g
        (y.sigmoid() * y).sum().backward()
    got = p.run({T: 3})

    def ref(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.layer_norm(x, (6,), eps=1e-5) * g
        return (y.sigmoid() * y).sum()

    assert_close(got, torch_grads(ref, xs, gs), atol=1e-4)


UNARY = ["exp", "sin", "cos", "tanh", "sigmoid", "relu", "abs", "erf", "neg"]


@pytest.mark.parametrize("fn", UNARY)
def test_unary_rules(fn: str) -> None:
    xs = rnd(3, 5)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        (getattr(x, fn)() * x).sum().backward()
    got = p.run({T: 3})
    assert_close(got, torch_grads(lambda x: (getattr(torch, fn)(x) * x).sum(), xs))


def test_binary_rules_with_broadcast() -> None:
    a_s, b_s = np.abs(rnd(3, 4)) + 0.5, rnd(4, seed=14)
    b_s[1] = a_s[0, 1]  # a maximum/minimum tie: torch splits the gradient equally
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        a, bb = p.leaf(a_s, (t,)), p.leaf(b_s)
        out = a / (bb * bb + 1.0) - a.ln() * bb + a ** bb + a.sqrt() + a.maximum(bb) - a.minimum(bb)
        out.sum().backward()
    got = p.run({T: 3})

    def ref(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a / (b * b + 1) - a.log() * b + a**b + a.sqrt() + a.maximum(b) - a.minimum(b)).sum()

    assert_close(got, torch_grads(ref, a_s, b_s))


def test_movement_rules() -> None:
    xs = rnd(2, 3, 4)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        y = x.permute((1, 0)).reshape((2, 6)).flip(1)
        z = RT.cat([y, y.slice_dim(1, 1, 4) * 2.0], dim=1)
        w = z.index_select(1, RT.const(np.array([0, 2, 2, 8]))).cumsum(1)
        (w.exp().sum() + x.expand((2, 3, 4)).sum(0).max()).backward()
    got = p.run({T: 2})

    def ref(x: torch.Tensor) -> torch.Tensor:
        total = torch.zeros(())
        for i in range(2):
            y = x[i].permute(1, 0).reshape(2, 6).flip(1)
            z = torch.cat([y, y[:, 1:4] * 2.0], 1)
            w = z.index_select(1, torch.tensor([0, 2, 2, 8])).cumsum(1)
            total = total + w.exp().sum() + x[i].expand(2, 3, 4).sum(0).max()
        return total

    assert_close(got, torch_grads(ref, xs))


def test_where_max_gather() -> None:
    xs = rnd(3, 5)
    idx = np.array([[4, 0, 1]])
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        m, _ = x.unsqueeze(0).max(1)
        g = x.unsqueeze(0).gather(1, RT.const(idx))
        ((x > 0).where(x * x, -x) .sum() + m.sum() * 3.0 + (g * g).sum()).backward()
    got = p.run({T: 3})

    def ref(x: torch.Tensor) -> torch.Tensor:
        total = torch.zeros(())
        for i in range(3):
            r = x[i]
            g = r.unsqueeze(0).gather(1, torch.tensor(idx))
            total = total + torch.where(r > 0, r * r, -r).sum() + r.max() * 3 + (g * g).sum()
        return total

    assert_close(got, torch_grads(ref, xs))


def test_detach_stops_gradient() -> None:
    xs, ws = rnd(4, 3), rnd(3, seed=15)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, w = p.leaf(xs, (t,)), p.leaf(ws)
        y = x * w
        (y * y.detach()).sum().backward()
    got = p.run({T: 4})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y = x * w
        return (y * y.detach()).sum()

    assert_close(got, torch_grads(ref, xs, ws))


def test_accumulation_over_two_backward_calls() -> None:
    xs = rnd(4, 3)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        (x * x).sum().backward()
        x.exp().sum().backward()
    got = p.run({T: 4})
    assert_close(got, torch_grads(lambda x: (x * x).sum() + x.exp().sum(), xs))


def test_requires_grad_tristate_and_leaves() -> None:
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        a = RT.ones((2,), requires_grad=True)
        n = RT.ones((2,))
        f = RT.ones((2,), requires_grad=False)
        assert (a * n).requires_grad is True
        assert (n * f).requires_grad is None
        assert (f * f).requires_grad is False
        assert a.detach().requires_grad is False and a.detach().tensor_id == a.tensor_id
        assert (a * n)._ctx is not None and (n * f)._ctx is None
        (a * n * 2.0).sum().backward()
        assert n.grad is None and f.grad is None
        assert a.grad is not None and a.grad.shape == a.shape and a.grad.dtype == a.dtype
    exe = p.ctx.compile({T: 2})
    exe.execute()
    assert torch.equal(exe.get_spatial_tensor_torch(a.grad.tensor_id, ()), torch.full((2,), 2.0))


def test_backward_with_explicit_grad_and_scalar_check() -> None:
    xs, gs = rnd(3, 2), rnd(3, 2, seed=16)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, g = p.leaf(xs, (t,)), p.source(gs, (t,))
        with pytest.raises(Exception, match="scalar"):
            x.exp().backward()
        x.exp().backward(g)
    got = p.run({T: 3})
    assert_close(got, torch_grads(lambda x: (x.exp() * torch.tensor(gs)).sum(), xs))


def test_float64_gradcheck_level() -> None:
    xs, ws = rnd(5, 3, dtype=np.float64), rnd(3, 3, dtype=np.float64, seed=17)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x, w = p.leaf(xs, (t,)), p.leaf(ws)
        hid = RT.placeholder((3,), dtypes.float64, domain=(t,))
        hid[0] = x.tanh()
        hid[True] = (hid[t - 1] @ w).sigmoid() * x
        (hid[0:T] ** 2).sum().backward()
    got = p.run({T: 5})

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        hs = [x[0].tanh()]
        for i in range(1, 5):
            hs.append((hs[-1] @ w).sigmoid() * x[i])
        return (torch.stack(hs) ** 2).sum()

    assert_close(got, torch_grads(ref, xs, ws), atol=1e-10)
    args = tuple(torch.tensor(a, requires_grad=True) for a in (xs, ws))
    assert torch.autograd.gradcheck(ref, args)
