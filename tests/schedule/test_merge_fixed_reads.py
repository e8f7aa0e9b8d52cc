"""Weights updated over an (i, e) domain (several epochs per rollout) and read by the rollout
at (i, 0): inside the loop over i the rollout, the learner and the weights formed one cycle
of ops with no common dimension, so the structural scheduler gave the program to isl's
scheduler (accept6 c13: 107 s at B = 2, unfinished after 55 minutes at B = 64). The read
`w[i, 0]` now reads a merge of only the weights' branches that hold at e = 0
(compiler/passes/merge_fixed_reads.py): the structural scheduler orders it. Values against
a torch replay (torch.optim.Adam, E steps per rollout)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn import Linear
from tempo.api.optim.optim import Adam
from tempo.core.configs import ExecutionConfig

I_, E_, B_, T_, LR = 3, 3, 4, 5, 0.05
W0 = np.array([[0.5, -0.5, 0.2], [0.1, 0.2, -0.3]], np.float32)


def obs_of(i: int, b: int, t: int) -> np.ndarray:
    return np.array([np.sin(i + b), np.cos(t - b), 0.1 * (i + t)], np.float32)


def tempo_losses(backend: str, vec: bool) -> tuple[np.ndarray, dict[str, float]]:
    cfg = dataclasses.replace(ExecutionConfig(dev="cpu", backend=backend),
                              enable_vectorization=vec, enable_fusion=vec)
    ctx = TempoContext(cfg, dim_names=("i", "e", "b", "t"))
    (i, I), (e, E), (b, B), (t, T) = ctx.variables_and_bounds
    got: dict[str, np.ndarray] = {}
    with ctx:
        pi = Linear(3, 2, domain=(i, e), w_init_fun=lambda shape, dtype, domain: RT.const(W0))
        f = RT.from_symbol
        obs = RT.stack([(f(i) + f(b)).cast(pi.w.dtype).sin(),
                        (f(t) - f(b)).cast(pi.w.dtype).cos(),
                        (f(i) + f(t)).cast(pi.w.dtype) * 0.1])
        old = (obs @ pi.w[i, 0].T + pi.b[i, 0]).log_softmax(-1).detach()  # acting weights
        O = obs[i, 0:B, 0:T]
        new = pi(O).log_softmax(-1)
        loss = ((new - old[i, 0:B, 0:T]).exp() * new).mean()
        opt = Adam(pi.parameters, [], lr=LR)
        loss.backward()
        opt.step()
        loss[0:I, 0:E].sink_udf(lambda v: got.__setitem__("loss", np.asarray(v)))
    exe = ctx.compile({I: I_, E: E_, B: B_, T: T_})
    exe.execute()
    return got["loss"], exe.get_compilation_time_breakdown()


def replay() -> np.ndarray:
    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(W0))
        lin.bias.zero_()
    opt = torch.optim.Adam(lin.parameters(), lr=LR)
    O = torch.tensor(np.array([[[obs_of(i, b, t) for t in range(T_)] for b in range(B_)]
                               for i in range(I_)]))
    out = np.zeros((I_, E_), np.float32)
    for it in range(I_):
        with torch.no_grad():
            old = lin(O[it]).log_softmax(-1)
        for ep in range(E_):
            new = lin(O[it]).log_softmax(-1)
            loss = ((new - old).exp() * new).mean()
            out[it, ep] = loss.item()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return out


@pytest.mark.parametrize("backend", ["torch", "numpy", "jax"])
@pytest.mark.parametrize("vec", [True, False], ids=["vec", "novec"])
def test_epochs_over_an_update_domain_schedule_structurally(backend: str, vec: bool) -> None:
    got, timings = tempo_losses(backend, vec)
    np.testing.assert_allclose(got, replay(), rtol=2e-5, atol=2e-6)
    assert "loop_tree" in timings and "isl_schedule" not in timings, timings
