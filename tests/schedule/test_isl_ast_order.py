"""isl's AST generator, given the scheduler's schedule tree, could emit a statement before
one it reads although the tree's flat map orders them right (accept6 c13, PPO with epochs:
the update's batch read `act[i, 0:B, 0:T]` ran before the vectorised sample for i = 1, a
KeyError at run time). The scheduler now generates the AST from the flat map with
separated loops. Checked
against a torch replay of the same rollouts (Adam, epochs over the recorded batch)."""
import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.distributions import Categorical
from tempo.api.nn import Linear
from tempo.api.optim.optim import Adam
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

I_, E_, B_, T_ = 2, 2, 2, 2
W = np.array([[0.5, -0.5], [0.1, 0.2]], np.float32)


def _run(backend: str, vec: bool, **kw: object) -> dict[str, np.ndarray]:
    # (merge_fixed_reads would let the structural scheduler order this program: these
    # tests are about isl's path, which other programs still take)
    cfg = ExecutionConfig(dev="cpu", backend=backend, enable_vectorization=vec,
                          algebraic_optims_to_disable=("merge_fixed_reads",), **kw)
    ctx = TempoContext(cfg, dim_names=("i", "e", "b", "t"))
    (i, I), (e, E), (b, B), (t, T) = ctx.variables_and_bounds
    out: dict[str, np.ndarray] = {}

    def grab(key):
        def f(v):
            out[key] = np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v)
        return f

    with ctx:
        pi = Linear(2, 2, domain=(i, e), w_init_fun=lambda shape, dtype, domain: RT.const(W))

        def f(v):
            return RT.from_symbol(v).cast(dtypes.float32)

        obs = RT.const(np.array([1.0, -1.0], np.float32)) * (f(b) + f(t) + f(i))
        dist = Categorical(logits=obs @ pi.w[i, 0].T + pi.b[i, 0])
        act = dist.sample()
        old_lp = dist.log_prob(act).detach()
        A = act[i, 0:B, 0:T].cast(dtypes.int64)
        lp = (pi(obs[i, 0:B, 0:T]).softmax(-1).ln() * A.one_hot(2).cast(dtypes.float32)).sum(-1)
        loss = -(lp - old_lp[i, 0:B, 0:T]).exp().mean()
        opt = Adam(pi.parameters, [], lr=0.05)
        loss.backward()
        opt.step()
        loss[0:I, 0:E].sink_udf(grab("loss"))
        act[0:I, 0:B, 0:T].sink_udf(grab("act"))
    ctx.compile({I: I_, E: E_, B: B_, T: T_}).execute()
    return out


def _reference(acts: np.ndarray) -> np.ndarray:
    w = torch.tensor(W, requires_grad=True)
    bias = torch.zeros(2, requires_grad=True)
    opt = torch.optim.Adam([w, bias], lr=0.05)
    losses = np.zeros((I_, E_), np.float32)
    for it in range(I_):
        k = torch.arange(B_)[:, None] + torch.arange(T_)[None, :] + it
        obs = k[..., None].float() * torch.tensor([1.0, -1.0])
        a = torch.tensor(acts[it].astype(np.int64))
        with torch.no_grad():
            old = torch.distributions.Categorical(logits=obs @ w.T + bias).log_prob(a)
        for ep in range(E_):
            lp = torch.distributions.Categorical(logits=obs @ w.T + bias).log_prob(a)
            loss = -(lp - old).exp().mean()
            losses[it, ep] = loss.item()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return losses


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torch", "numpy"])
@pytest.mark.parametrize("vec", [True, False])
def test_ppo_epochs_batch_read_after_vectorised_samples(backend: str, vec: bool) -> None:
    got = _run(backend, vec)
    assert got["act"].shape == (I_, B_, T_)
    np.testing.assert_allclose(got["loss"], _reference(got["act"]), rtol=1e-4, atol=1e-5)
