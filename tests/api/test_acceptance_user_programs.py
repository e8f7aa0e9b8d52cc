"""Regressions from the user-program acceptance sweep (accept2), written as a user would from
API.md and checked against torch / numpy: a recurrent hidden state's `.grad`, a Categorical
scalar action against batched logits, and `execute_until_barrier` stopping after the sinks
recorded before the barrier."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.distributions import Categorical
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoError


def _npy(x):  # type: ignore[no-untyped-def]
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_recurrent_hidden_state_gets_grad_through_time(backend: str) -> None:
    """API §3.7 / §7.11: `h` is differentiated through, so it is an intermediate with `.grad`
    (the total gradient at every t, as torch's retain_grad gives); it was a silent None."""
    w0 = np.array([0.5, -0.3, 0.8], np.float32)
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend=backend), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: dict[str, np.ndarray] = {}
    with ctx:
        w = RT.const(w0, requires_grad=True)
        h = RT.placeholder((3,), dtypes.float32, domain=(t,))
        h[0] = w * 1.0
        h[True] = (h[t - 1] * w).tanh() + 0.1
        loss = h.sum()[0:T].sum()
        loss.backward()
        assert h.requires_grad is True and h.grad is not None
        h.grad[0:T].sink_udf(lambda g: got.__setitem__("h", _npy(g)))
        w.grad.sink_udf(lambda g: got.__setitem__("w", _npy(g)))
    ctx.compile({T: 4}).execute()

    wt = torch.tensor(w0, requires_grad=True)
    hs = [wt * 1.0]
    for _ in range(3):
        hs.append((hs[-1] * wt).tanh() + 0.1)
    for x in hs:
        x.retain_grad()
    sum(x.sum() for x in hs).backward()
    np.testing.assert_allclose(got["h"], torch.stack([x.grad for x in hs]).numpy(), rtol=1e-5)
    np.testing.assert_allclose(got["w"], wt.grad.numpy(), rtol=1e-5)


def test_categorical_log_prob_broadcasts_a_scalar_action_like_torch() -> None:
    """A policy's logits for one observation are (1, K); the env takes the squeezed action ()."""
    logits = np.array([[0.3, -1.2, 2.0]], np.float32)
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="torch"), num_dims=0)
    got: dict[str, np.ndarray] = {}
    with ctx:
        c = Categorical(logits=RT.const(logits))
        lp = c.log_prob(RT.const(2).cast(dtypes.int64))
        lp.sink_udf(lambda v: got.__setitem__("lp", _npy(v)))
        with pytest.raises(TempoError, match="does not broadcast"):
            Categorical(logits=RT.const(np.zeros((4, 3), np.float32))).log_prob(
                RT.const(np.zeros(3, np.int64)))
    ctx.compile({}).execute()
    want = torch.distributions.Categorical(logits=torch.tensor(logits)).log_prob(torch.tensor(2))
    np.testing.assert_allclose(got["lp"], want.numpy(), rtol=1e-6)


def test_execute_until_barrier_stops_after_the_sinks_before_it() -> None:
    """The barrier was scheduled before the loops (it had no inputs), so the run stopped
    before any sink fired; it must stop after every sink recorded before it, and before
    the ones recorded after it."""
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="torch"), num_dims=2)
    (i, I), (t, T) = ctx.variables_and_bounds
    log: list[tuple[str, int]] = []
    with ctx:
        x = RT.placeholder((2,), dtypes.float32, domain=(i, t))
        x[i, 0] = RT.ones((2,)) * RT.from_symbol(i)
        x[i, t + 1] = x * 0.5 + 1.0
        s = x[i, 0:T].sum(0)
        s.sink_with_ts_udf(lambda v, ts: log.append(("s", ts[i])))
        RT.barrier("mid")
        s[0:I].sum().sink_udf(lambda v: log.append(("total", -1)))
    exe = ctx.compile({I: 3, T: 4})
    exe.execute_until_barrier("mid")
    assert log == [("s", 0), ("s", 1), ("s", 2)]
    while exe.tick():
        pass
    assert log[-1] == ("total", -1) and len(log) == 4


def test_reducing_a_missing_dim_names_the_tensor_and_the_fix() -> None:
    """`feats.sum(1)` on a (3,) vector over t: the error named no tensor; it now names the
    user's tensor and line and says symbolic dims are reduced by slicing."""
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="torch"), num_dims=1)
    ((t, _T),) = ctx.variables_and_bounds
    with ctx:
        feats = RT.random((3,), domain=(t,))
        with pytest.raises(TempoError, match=r"feats = RT.random.*slice them") as info:
            feats.sum(1)
    assert "test_acceptance_user_programs.py:" in str(info.value)
