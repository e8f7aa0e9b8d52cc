"""torch.optim's spellings of the Adam family's arguments (accept8 mistakes8 s09/s10):
`Adam(..., betas=(b1, b2))` and `AdamW(..., weight_decay=)` raised Python's bare
TypeError; they now train as torch.optim does. `Adam(weight_decay=)` (torch's coupled L2,
which Tempo's Adam has not) and other torch-only options are ArgumentErrors naming the
user's line and the API's arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn import Linear
from tempo.api.optim.optim import Adam, AdamW
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import ArgumentError

I_, N = 4, 5


def _losses(cfg: ExecutionConfig, make_opt) -> np.ndarray:
    g = np.random.default_rng(1)
    X = g.normal(size=(N, 3)).astype(np.float32)
    W0 = g.normal(size=(2, 3)).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("i",))
    ((i, I),) = ctx.variables_and_bounds
    got: dict[str, np.ndarray] = {}
    with ctx:
        lin = Linear(3, 2, domain=(i,), w_init_fun=lambda shape, dtype, domain: RT.const(W0))
        loss = ((lin(RT.const(X)) - 1.0) ** 2).mean()
        loss.backward()
        make_opt(lin.parameters).step()
        loss[0:I].sink_udf(lambda v: got.__setitem__("loss", np.asarray(v).copy()))
    ctx.compile({I: I_}).execute()
    return got["loss"], X, W0


def _torch_losses(X: np.ndarray, W0: np.ndarray, make_opt) -> list[float]:
    m = torch.nn.Linear(3, 2)
    with torch.no_grad():
        m.weight.copy_(torch.tensor(W0))
        m.bias.zero_()
    opt = make_opt(m.parameters())
    out = []
    for _ in range(I_):
        loss = ((m(torch.tensor(X)) - 1.0) ** 2).mean()
        out.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return out


def test_adam_betas(cfg: ExecutionConfig) -> None:
    got, X, W0 = _losses(cfg, lambda ps: Adam(ps, [], lr=0.1, betas=(0.5, 0.9)))
    want = _torch_losses(X, W0, lambda ps: torch.optim.Adam(ps, lr=0.1, betas=(0.5, 0.9)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_adamw_weight_decay(cfg: ExecutionConfig) -> None:
    got, X, W0 = _losses(cfg, lambda ps: AdamW(ps, [], lr=0.1, weight_decay=0.3,
                                               betas=(0.8, 0.95)))
    want = _torch_losses(X, W0, lambda ps: torch.optim.AdamW(ps, lr=0.1, weight_decay=0.3,
                                                             betas=(0.8, 0.95)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw, words", [
    ({"weight_decay": 0.1}, ["AdamW(wd=", "no weight decay"]),
    ({"amsgrad": True}, ["'amsgrad'", "b1, b2 (torch: betas)"]),
    ({"betas": (0.5, 0.9), "b1": 0.8}, ["not both"]),
])
def test_adam_torch_only_arguments_are_argument_errors(cfg: ExecutionConfig, kw: dict,
                                                        words: list[str]) -> None:
    ctx = TempoContext(cfg, dim_names=("i",))
    with ctx:
        lin = Linear(3, 1, domain=(ctx.variables[0],))
        with pytest.raises(ArgumentError) as info:
            Adam(lin.parameters, [], lr=0.1, **kw)
    msg = str(info.value)
    assert "test_torch_spellings.py:" in msg and all(w in msg for w in words), msg
