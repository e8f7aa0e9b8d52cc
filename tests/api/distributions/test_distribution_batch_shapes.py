"""Distributions broadcast their parameters as torch.distributions does (acceptance accept5b):
a Normal with mu (N, A) and a state-independent sigma (A,) has entropy/stddev/variance of
shape (N, A), so `entropy().sum()` and its gradient count every sample; a Categorical from
probs with a zero entry has torch's finite log-prob for that class (log of the probs clamped
to [eps, 1 - eps]), so `log_prob * 0` stays 0 instead of NaN. Values vs torch, on torch,
jax and numpy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.distributions as td

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.distributions import Categorical, Normal
from tempo.core.configs import ExecutionConfig

MU = np.array([[0.3, -1.0, 2.0], [0.0, 0.5, -0.2], [1.5, 1.0, 0.1], [-0.7, 0.2, 0.9]], np.float32)
LS = np.array([0.2, -0.4, 0.1], np.float32)
P = np.array([[0.2, 0.0, 0.6, 0.2], [1.0, 2.0, 3.0, 4.0]], np.float32)


def _cfg(backend: str) -> ExecutionConfig:
    return dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend)


def _grab(store: dict, key: str):  # type: ignore[no-untyped-def]
    return lambda v: store.__setitem__(key, np.asarray(v.detach() if hasattr(v, "detach") else v))


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_normal_with_state_independent_sigma_broadcasts(backend: str) -> None:
    ctx = TempoContext(_cfg(backend), num_dims=0)
    s: dict = {}
    with ctx:
        mu = RT.const(MU)
        ls = RT.const(LS, requires_grad=True)
        n = Normal(mu, ls.exp())
        ent = n.entropy()
        ent.sink_udf(_grab(s, "ent"))
        n.stddev.sink_udf(_grab(s, "std"))
        n.variance.sink_udf(_grab(s, "var"))
        Normal(mu, 0.7).entropy().sink_udf(_grab(s, "ent_float_sigma"))
        ent.sum().backward()
        ls.grad.sink_udf(_grab(s, "g_ls"))
    ctx.compile({}).execute()
    tls = torch.tensor(LS, requires_grad=True)
    tn = td.Normal(torch.tensor(MU), tls.exp())
    tn.entropy().sum().backward()
    want = {"ent": tn.entropy(), "std": tn.stddev, "var": tn.variance,
            "ent_float_sigma": td.Normal(torch.tensor(MU), 0.7).entropy(), "g_ls": tls.grad}
    for k, w in want.items():
        w = w.detach().numpy()
        assert s[k].shape == w.shape, (k, s[k].shape, w.shape)
        np.testing.assert_allclose(s[k], w, rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_categorical_probs_with_a_zero_has_torchs_finite_log_prob(backend: str) -> None:
    ctx = TempoContext(_cfg(backend), num_dims=0)
    s: dict = {}
    with ctx:
        c = Categorical(probs=RT.const(P))
        lp = c.log_prob(RT.const(np.array([1, 2], np.int64)))
        lp.sink_udf(_grab(s, "lp"))
        (lp * 0.0).sink_udf(_grab(s, "lp0"))
        c.entropy().sink_udf(_grab(s, "ent"))
    ctx.compile({}).execute()
    tc = td.Categorical(probs=torch.tensor(P))
    np.testing.assert_allclose(s["lp"], tc.log_prob(torch.tensor([1, 2])).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(s["lp0"], np.zeros(2, np.float32))
    np.testing.assert_allclose(s["ent"], tc.entropy().numpy(), rtol=1e-6)
