"""What a PyTorch user types on day one: `SGD(model.parameters(), ...)` (a call, where
Tempo's `parameters` is an attribute) trains as the attribute form does, with torch's values;
a placeholder created without the domain its definition indexes names itself and the fix."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn import Linear
from tempo.api.optim.optim import SGD
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import IndexExprError

I_, N = 4, 5


def test_parameters_called_like_torch_trains_like_torch(cfg: ExecutionConfig) -> None:
    g = np.random.default_rng(0)
    X = g.normal(size=(N, 3)).astype(np.float32)
    W0 = g.normal(size=(2, 3)).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("i",))
    ((i, I),) = ctx.variables_and_bounds
    got: dict[str, np.ndarray] = {}
    with ctx:
        lin = Linear(3, 2, domain=(i,), w_init_fun=lambda shape, dtype, domain: RT.const(W0))
        assert lin.parameters() is not None and len(lin.parameters()) == 2
        loss = (lin(RT.const(X)) ** 2).mean()
        loss.backward()
        SGD(lin.parameters(), [], lr=0.1, momentum=0.9).step()
        loss[0:I].sink_udf(lambda v: got.__setitem__("loss", np.asarray(v)))
    ctx.compile({I: I_}).execute()
    m = torch.nn.Linear(3, 2)
    with torch.no_grad():
        m.weight.copy_(torch.tensor(W0))
        m.bias.zero_()
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    want = []
    for _ in range(I_):
        out = (m(torch.tensor(X)) ** 2).mean()
        want.append(out.item())
        opt.zero_grad()
        out.backward()
        opt.step()
    np.testing.assert_allclose(got["loss"], want, rtol=1e-5, atol=1e-6)


def test_placeholder_without_the_domain_its_definition_indexes(cfg: ExecutionConfig) -> None:
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        h = RT.placeholder((4,), dtypes.float32)
        with pytest.raises(IndexExprError) as info:
            h[t + 1] = h * 0.5
    msg = str(info.value)
    assert "h = RT.placeholder((4,), dtypes.float32)" in msg and "domain=(t,)" in msg, msg
    assert "test_torch_habits.py:" in msg and "h[t + 1] = h * 0.5" in msg, msg


def test_module_parameters_without_an_optimizer_say_so(cfg: ExecutionConfig) -> None:
    """A Linear over an update domain (i,) read at i = 1 with no optimizer step and no
    fixed(): the run-time error said only 'add a definition (x[True] = ...)'."""
    from tempo.runtime.codegen import UndefinedPointError

    ctx = TempoContext(cfg, dim_names=("i",))
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        lin = Linear(3, 2, domain=(i,))
        lin(RT.ones((3,)))[0:I].sink_udf(lambda v: None)
    with pytest.raises(UndefinedPointError) as info:
        ctx.compile({I: 2}).execute()
    msg = str(info.value)
    assert "i = 1" in msg and "opt.step()" in msg and "module.fixed()" in msg, msg
