"""When a gradient the user asked for would be missing (issue 9): a tensor with
requires_grad=True that the loss reaches through the definition of a placeholder declared
with requires_grad=True (a leaf, not differentiated through) is a GradientError naming both
and their lines; a leaf the loss does not use keeps `.grad` None, as in PyTorch."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from autodiff_harness import Prog, assert_close, rnd

from tempo.api import RecurrentTensor as RT
from tempo.api.autodiff import GradientError
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoError

N = 5
HERE = os.path.basename(__file__)


def _leaf_recurrence(p: Prog, w: RT, detach: bool = False) -> RT:
    """The issue's recurrence with `h` declared requires_grad=True (so `h` is a leaf)."""
    (t, T), = p.vb
    v = p.source(rnd(N, 3), (t,))
    h = RT.placeholder((3,), dtypes.float32, domain=(t,), requires_grad=True)
    ww = w.detach() if detach else w
    h[0] = ww * v[0]
    h[True] = (ww * h[t - 1].detach() + v).tanh() if detach else (ww * h[t - 1] + v).tanh()
    return h


def test_param_reached_only_through_leaf_placeholder_is_an_error() -> None:
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        w = RT.const(0.7, requires_grad=True)
        h = _leaf_recurrence(p, w)
        with pytest.raises(GradientError) as info:
            h[T - 1].sum().backward()
    msg = str(info.value)
    assert isinstance(info.value, TempoError)
    assert "w = RT.const(0.7, requires_grad=True)" in msg  # the tensor that gets none
    assert "h = RT.placeholder(" in msg and "only through" in msg  # the leaf and why
    assert f"{HERE}:" in msg and "h[T - 1].sum().backward()" in msg  # the user's lines


def test_param_reached_partly_through_leaf_placeholder_is_an_error() -> None:
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        w = RT.const(0.7, requires_grad=True)
        h = _leaf_recurrence(p, w)
        with pytest.raises(GradientError, match="partly through"):
            (h[T - 1].sum() + w * 2.0).backward()


def test_detached_definition_of_leaf_placeholder_is_fine() -> None:
    """Cutting the path with detach() is explicit: no error, and `h` (a leaf) gets the
    gradient of the loss with respect to its own values only."""
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        w = RT.const(0.7, requires_grad=True)
        h = _leaf_recurrence(p, w, detach=True)
        h[T - 1].sum().backward()
        assert w.grad is None and h.grad is not None
        hg = h.grad
    exe = p.ctx.compile({T: N})
    exe.execute()
    got = exe.get_spatial_tensor_torch(hg.tensor_id, (slice(None),)).detach().cpu()
    want = torch.zeros(N, 3)
    want[N - 1] = 1.0
    assert_close([got], [want])


def test_unused_leaf_keeps_grad_none() -> None:
    """Like PyTorch: a leaf the loss does not depend on gets no `.grad`, and no error."""
    xs = rnd(N, 3)
    p = Prog(1)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,))
        unused = RT.const(np.ones(3, dtype=np.float32), requires_grad=True)
        (x * x).sum().backward()
        assert unused.grad is None
    got = p.run({T: N})
    assert_close(got, [torch.tensor(2 * xs)])


def test_leaf_placeholder_reading_itself_is_fine() -> None:
    """A parameter kept constant over i (`p[True] = p[i-1]`, what `Module.fixed()` writes)
    reads only itself: nothing is dropped, and `p` gets the gradient of every iteration."""
    p = Prog(1)
    (i, I), = p.vb
    with p.ctx:
        w = RT.placeholder((2,), dtypes.float32, domain=(i,), requires_grad=True)
        w[0] = RT.const(np.array([1.0, -2.0], dtype=np.float32))
        w[True] = w[i - 1]
        (w * w).sum().backward()
        g = w.grad
    exe = p.ctx.compile({I: 3})
    exe.execute()
    got = exe.get_spatial_tensor_torch(g.tensor_id, (slice(None),)).detach().cpu()
    assert_close([got], [torch.tensor([[2.0, -4.0]] * 3)])


def test_backward_of_a_gradient_says_double_backward_is_unsupported() -> None:
    """A gradient penalty written as in torch (`(w.grad ** 2).sum().backward()`) blamed the
    weights' requires_grad flags; the error now says gradients are first-order."""
    p = Prog(1)
    with p.ctx:
        w = RT.const(np.array([0.5, -1.0], np.float32), requires_grad=True)
        (w * w * w).sum().backward()
        pen = (w.grad * w.grad).sum()
        with pytest.raises(GradientError, match="computed from a gradient.*first-order"):
            pen.backward()
