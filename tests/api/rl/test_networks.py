"""`ModelBuilder` networks against eager PyTorch with the same weights (API.md §6.4):
discrete and Gaussian policies (actions, log_prob, entropy, value), q-networks, CNN
encoders, recurrent hidden layers; target networks by polyak_update and copy_every."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.rl.networks.model_builder import ModelBuilder
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import TempoError

OBS = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)


def _ctx(num_dims: int = 0) -> TempoContext:
    return TempoContext(ExecutionConfig(dev="cpu", backend="torch", path="", seed=1),
                        num_dims=num_dims)


def _grab(ctx: TempoContext, xs: list, bounds: dict | None = None) -> list[torch.Tensor]:
    out: list = []
    with ctx:
        RT.sink_many_udf(xs, lambda v: out.append([torch.as_tensor(a).clone() for a in v]))
    ctx.compile(bounds or {}).execute()
    return out[0]


def _trunk(ws: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    for w, b in zip(ws[0::2], ws[1::2]):
        x = torch.tanh(x @ w.T + b)
    return x


@pytest.mark.parametrize("kind", ["discrete", "continuous"])
def test_policy_network_matches_eager_torch(kind: str) -> None:
    ctx = _ctx()
    with ctx:
        b = ModelBuilder().with_ff_encoder((3,), 8).with_ff_hidden([6])
        b = b.with_discrete_pi_decoder(4) if kind == "discrete" else \
            b.with_continuous_pi_decoder((2,), bias=True)
        net = b.with_vfun_decoder().build()
        action, value = net(RT.const(OBS))
        got = _grab(ctx, [action, value, net.log_prob(action), net.entropy(), *net.parameters])
    a, v, lp, ent, *p = got
    names = list(net.flat_state_dict())  # the order of net.parameters
    assert len(p) == len(names)
    sd = dict(zip(names, p))
    z = _trunk([v_ for k, v_ in sd.items() if k.startswith("trunk")], torch.from_numpy(OBS))
    head_w = [v_ for k, v_ in sd.items() if k.startswith("head.")]
    vh = [v_ for k, v_ in sd.items() if k.startswith("value_head")]
    torch.testing.assert_close(v, (z @ vh[0].T + vh[1]).reshape(5))
    out = z @ head_w[0].T + head_w[1]
    if kind == "discrete":
        dist = torch.distributions.Categorical(logits=out)
        assert a.shape == (5,) and ((a >= 0) & (a < 4)).all()
        torch.testing.assert_close(lp, dist.log_prob(a))
        torch.testing.assert_close(ent, dist.entropy())
    else:
        sigma = sd["param_0"].exp()  # the learned state-independent log-sigma
        dist = torch.distributions.Normal(out, sigma)
        assert a.shape == (5, 2)
        torch.testing.assert_close(lp, dist.log_prob(a).sum(1))
        torch.testing.assert_close(ent, dist.entropy().sum(1))


def test_qnetwork_cnn_encoder_and_greedy_action() -> None:
    obs = np.random.default_rng(1).standard_normal((2, 1, 6, 6)).astype(np.float32)
    ctx = _ctx()
    with ctx:
        net = (ModelBuilder().with_cnn_encoder([(1, 2, 3, 1, 0, "relu")], obs_shape=(1, 6, 6))
               .with_ff_hidden([5]).with_qfun_decoder(3).build())
        action, none = net(RT.const(obs))
        assert none is None
        got = _grab(ctx, [action, net.qvalues(), *net.parameters])
    a, q, cw, cb, hw, hb, qw, qb = got
    h = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(obs), cw, cb.reshape(-1)))
    h = torch.tanh(h.flatten(1) @ hw.T + hb)
    want = h @ qw.T + qb
    torch.testing.assert_close(q, want)
    torch.testing.assert_close(a, want.argmax(-1))


def test_recurrent_hidden_layer_carries_state_over_time() -> None:
    xs = np.random.default_rng(2).standard_normal((4, 1, 3)).astype(np.float32)
    ctx = _ctx(1)
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        net = (ModelBuilder().with_ff_encoder((3,), 4).with_recurrent_ff_hidden([4])
               .with_vfun_decoder_only().build())
        x = RT.source_with_ts_udf(lambda ts: xs[ts[t]], (1, 3), "float32", domain=(t,))
        v, _ = net(x)
        got = _grab(ctx, [v[0:T], *net.parameters], {T: 4})
    vs, ew, eb, rw, rb, uw, hw, hb = got
    h = torch.zeros(1, 4)
    for k in range(4):
        e = torch.tanh(torch.from_numpy(xs[k]) @ ew.T + eb)
        h = torch.tanh(e @ rw.T + rb + (h @ uw.T if k else 0.0))
        torch.testing.assert_close(vs[k], (h @ hw.T + hb).reshape(1))


@pytest.mark.parametrize(("tau", "freq"), [(0.5, 1), (1.0, 2)])
def test_polyak_update_and_copy_every(tau: float, freq: int) -> None:
    ctx = _ctx(1)
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        b = ModelBuilder(domain=(i,)).with_ff_encoder((3,), 2).with_qfun_decoder(2)
        net = b.build()
        for p in net.parameters:  # a stand-in for an optimizer: +1 per step
            p[True] = p[i - 1] + 1.0
        if tau == 1.0:
            target = net.copy_every(freq)
        else:
            target = b.build()
            net.polyak_update(target, tau, update_freq=freq)
        p0, tp0 = net.parameters[0], target.parameters[0]
        online, tgt = _grab(ctx, [p0[0:I], tp0[0:I]], {I: 6})
    ref = [online[0]]
    for k in range(1, 6):
        upd = k % freq == 0
        ref.append(tau * online[k] + (1 - tau) * ref[-1] if upd else ref[-1])
    torch.testing.assert_close(tgt, torch.stack(ref))


def test_builder_errors() -> None:
    with _ctx():
        with pytest.raises(TempoError, match="encoder"):
            ModelBuilder().with_qfun_decoder(2).build()
        with pytest.raises(TempoError, match="policy decoder"):
            ModelBuilder().with_ff_encoder((3,), 2).with_qfun_decoder(2).with_vfun_decoder()
        net = ModelBuilder().with_ff_encoder((3,), 2).with_discrete_pi_decoder(2).build()
        with pytest.raises(TempoError, match="after a forward"):
            net.log_prob(RT.zeros((1,), "int64"))


def test_copy_every_over_per_step_updates() -> None:
    """A q-network updated at every (i, t) (DQN's per-step updates): the target at (i, t)
    is the network at (i', 0), i' the last multiple of `num_steps` up to i."""
    from tempo.api.nn.module import update_prev_index
    from tempo.core.domain import Domain

    ctx = _ctx(2)
    (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        net = ModelBuilder(domain=(i, t)).with_ff_encoder((3,), 2).with_qfun_decoder(2).build()
        prev = tuple(update_prev_index(Domain.from_((i, t)), Domain.from_((i, t))))
        for p in net.parameters:  # a stand-in for an optimizer: +1 per step
            p[True] = p[prev] + 1.0
        target = net.copy_every(2, var=i)
        p0, tp0 = net.parameters[0], target.parameters[0]
        online, tgt = _grab(ctx, [p0[0:I, 0:T], tp0[0:I, 0:T]], {I: 5, T: 3})
    for k in range(5):
        for j in range(3):
            torch.testing.assert_close(online[k, j], online[0, 0] + 3 * k + j)
            torch.testing.assert_close(tgt[k, j], online[k - k % 2, 0])


@pytest.mark.parametrize("steps", [0, -2, 1.5])
def test_copy_every_names_its_own_argument(steps: object) -> None:
    """`net.copy_every(0)` (accept8 mistakes8b t08) said 'polyak_update: need update_freq >=
    1 and tau in [0, 1], got 0, 1.0': arguments the user never passed. It names num_steps."""
    ctx = _ctx(1)
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        net = ModelBuilder(domain=(i,)).with_ff_encoder((3,), 2).with_qfun_decoder(2).build()
        with pytest.raises(TempoError) as info:
            net.copy_every(steps)  # type: ignore[arg-type]
    msg = str(info.value)
    assert "copy_every: num_steps must be an int >= 1" in msg and "polyak" not in msg, msg
    assert "test_networks.py:" in msg, msg
