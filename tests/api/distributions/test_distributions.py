"""Categorical, Normal and Uniform match torch.distributions: log_prob, entropy, cdf and
moments exactly, and sampling histograms within 15%."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.distributions as td

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.distributions import Categorical, Normal, Uniform
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import ArgumentError

S = 4000


def _run(body):  # type: ignore[no-untyped-def]
    ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=1)
    ((s, Sb),) = ctx.variables_and_bounds
    with ctx:
        outs = body(s)
    exe = ctx.compile({Sb: S})
    exe.execute()

    def get(x, idx=()):  # type: ignore[no-untyped-def]
        return exe.get_spatial_tensor_torch(x.tensor_id, idx)

    return get, outs


def _close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(a.double().numpy(), b.double().numpy(), rtol=tol, atol=tol)


def test_categorical_from_logits_and_probs() -> None:
    logits = torch.tensor([[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, -3.0, 0.2]])
    probs = torch.tensor([0.1, 0.6, 0.0, 0.3]) * 2
    k = torch.tensor([2, 0])

    def body(s):  # type: ignore[no-untyped-def]
        c = Categorical(logits=RT.const(logits.numpy()), domain=(s,))
        cp = Categorical(probs=RT.const(probs.numpy()), domain=(s,))
        return (
            c.log_prob(RT.const(k.numpy())),
            c.entropy(),
            c.mode,
            cp.entropy(),
            cp.log_prob(1),
            c.sample(),
            cp.sample(),
        )

    get, (lp, ent, mode, entp, lpp, smp, smpp) = _run(body)
    tc, tcp = td.Categorical(logits=logits), td.Categorical(probs=probs)
    _close(get(lp), tc.log_prob(k))
    _close(get(ent), tc.entropy())
    _close(get(entp), tcp.entropy())
    _close(get(lpp), tcp.log_prob(torch.tensor(1)))
    assert get(mode).tolist() == [2, 0]
    samples = get(smp, (slice(0, S),))  # (S, 2)
    for row in range(2):
        freq = torch.bincount(samples[:, row], minlength=4).double() / S
        p = tc.probs[row].double()
        assert ((freq - p).abs() <= 0.15 * p + 0.01).all(), (freq, p)
    freq = torch.bincount(get(smpp, (slice(0, S),)), minlength=4).double() / S
    assert freq[2] == 0 and ((freq - tcp.probs).abs() <= 0.15 * tcp.probs + 0.01).all()


def test_normal() -> None:
    mu, sigma = torch.tensor([0.5, -2.0]), torch.tensor([1.5, 0.3])
    x = torch.tensor([0.1, -1.7])

    def body(s):  # type: ignore[no-untyped-def]
        n = Normal(RT.const(mu.numpy()), RT.const(sigma.numpy()), domain=(s,))
        return (
            n.log_prob(RT.const(x.numpy())),
            n.entropy(),
            n.cdf(RT.const(x.numpy())),
            n.variance,
            n.sample(),
        )

    get, (lp, ent, cdf, var, smp) = _run(body)
    tn = td.Normal(mu, sigma)
    _close(get(lp), tn.log_prob(x))
    _close(get(ent), tn.entropy())
    _close(get(cdf), tn.cdf(x))
    _close(get(var), tn.variance)
    samples = get(smp, (slice(0, S),))
    edges = torch.linspace(-2, 2, 9)
    for j in range(2):
        z = ((samples[:, j] - mu[j]) / sigma[j]).clamp(-1.999, 1.999)
        hist = torch.histc(z, bins=8, min=-2, max=2) / S
        ref = td.Normal(0.0, 1.0).cdf(edges[1:]) - td.Normal(0.0, 1.0).cdf(edges[:-1])
        ref[0] += td.Normal(0.0, 1.0).cdf(torch.tensor(-2.0))
        ref[-1] += 1 - td.Normal(0.0, 1.0).cdf(torch.tensor(2.0))
        assert ((hist - ref).abs() <= 0.15 * ref).all(), (hist, ref)


def test_uniform() -> None:
    low, high = torch.tensor([0.0, -3.0]), torch.tensor([2.0, 5.0])
    x = torch.tensor([0.5, 6.0])

    def body(s):  # type: ignore[no-untyped-def]
        u = Uniform(RT.const(low.numpy()), RT.const(high.numpy()), domain=(s,))
        return (
            u.log_prob(RT.const(x.numpy())),
            u.entropy(),
            u.cdf(RT.const(x.numpy())),
            u.mean,
            u.stddev,
            u.sample(),
        )

    get, (lp, ent, cdf, mean, std, smp) = _run(body)
    tu = td.Uniform(low, high, validate_args=False)
    _close(get(lp), tu.log_prob(torch.tensor([0.5, 4.0])))  # no range check (API §6.3)
    _close(get(ent), tu.entropy())
    _close(get(cdf), tu.cdf(x))
    _close(get(mean), tu.mean)
    _close(get(std), tu.stddev)
    samples = get(smp, (slice(0, S),))
    for j in range(2):
        hist = torch.histc(samples[:, j], bins=5, min=float(low[j]), max=float(high[j])) / S
        assert ((hist - 0.2).abs() <= 0.15 * 0.2).all(), hist


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_categorical_log_prob_of_a_value_outside_the_support_raises(backend: str) -> None:
    """torch.distributions raises ValueError for 1.5 or 3 with 3 classes (validate_args)
    and takes a float tensor holding integers; log_prob cast 1.5 to the class 1 silently
    (accept6 m17). A value known when recorded raises an ArgumentError (a ValueError) at
    the call's line; a float computed by the program, when the run meets it."""
    probs = np.array([0.2, 0.3, 0.5], np.float32)
    tc = td.Categorical(probs=torch.from_numpy(probs))

    def run(value):  # type: ignore[no-untyped-def]
        ctx = TempoContext(dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend),
                           num_dims=1, dim_names=("t",))
        ((t, T),) = ctx.variables_and_bounds
        got: list[float] = []
        with ctx:
            lp = Categorical(probs=RT.const(probs)).log_prob(value(t))  # the user's line
            lp.sink_udf(lambda v: got.append(float(np.asarray(
                v.cpu() if hasattr(v, "cpu") else v))))
        ctx.compile({T: 3}).execute()
        return got

    for bad, word in ((lambda t: 1.5, "1.5"), (lambda t: 3, "got 3"),
                      (lambda t: RT.const(np.array(-1.0, np.float32)), "got -1")):
        with pytest.raises(ArgumentError, match=word) as err:
            run(bad)
        assert isinstance(err.value, ValueError) and "the user's line" in str(err.value)
        with pytest.raises(ValueError):
            tc.log_prob(torch.tensor(float(word.split()[-1])))
    with pytest.raises(ArgumentError, match="got 0.5") as err:  # at t = 1, when it runs
        run(lambda t: RT.from_symbol(t).cast("float32") * 0.5)
    assert "the user's line" in str(err.value)
    got = run(lambda t: RT.from_symbol(t).cast("float32"))  # integral floats, as torch
    want = tc.log_prob(torch.arange(3, dtype=torch.float32))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)
    assert run(lambda t: RT.const(np.float32(2.0))) == pytest.approx(  # over (): one point
        [float(tc.log_prob(torch.tensor(2.0)))])
