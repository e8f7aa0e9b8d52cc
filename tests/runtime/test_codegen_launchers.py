"""The generated code's launchers: values consumed where they are made live in locals,
bounds are bound into kernels at compile time. Each program runs with the launchers on
and off on every backend and must agree bit for bit, and with eager torch."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.compiler.pipeline import CLEANUP
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.shape import Shape
from tempo.runtime.backends.torch import TorchBackend
from tempo.runtime.static_args import bind_bounds

T_, D = 6, 5
RNG = np.random.default_rng(3)
X = RNG.standard_normal((T_, D)).astype(np.float32)
W = (RNG.standard_normal((D, D)) * 0.3).astype(np.float32)


def all_passes(cfg: ExecutionConfig) -> ExecutionConfig:
    """Every clean-up pass and GC on (frees are what lets values live in locals)."""
    on = {p.flag: True for p in CLEANUP if p.flag}
    return dataclasses.replace(cfg, **on, enable_gc=True, executor_debug_mode=False,
                               enable_custom_thunk_launchers=True)


def _rnn(cfg, out: list) -> object:  # noqa: ANN001 - fixture config
    """h[0] = x[0]; h[t] = tanh(h[t-1] @ W + x[t]); a per-step chain of point ops, a
    reshape through the bound T, and a sum over the whole history, sunk to `out`."""
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: X[ts[t]], (D,), dtypes.float32, domain=(t,))
        w = RT.const(W)
        h = RT.placeholder((D,), dtypes.float32, domain=(t,))
        h[0] = x
        h[True] = ((h[t - 1] @ w) + x).tanh()
        y = (h * h + 1.0).sqrt() * 0.5 - h.exp() * 0.1
        hist = y[0:T].reshape((T, D)).sum(0)
        hist.sink_udf(lambda v: out.append(torch.from_dlpack(v).clone().numpy()))
    return ctx.compile({T: T_})


def _eager() -> np.ndarray:
    x, w = torch.from_numpy(X), torch.from_numpy(W)
    h, ys = x[0], []
    for k in range(T_):
        if k:
            h = torch.tanh(h @ w + x[k])
        ys.append((h * h + 1.0).sqrt() * 0.5 - h.exp() * 0.1)
    return torch.stack(ys).sum(0).numpy()


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_locals_agree_with_stores_and_eager(cfg, backend: str) -> None:  # noqa: ANN001
    got = {}
    for on in (False, True):
        c = dataclasses.replace(all_passes(cfg), backend=backend,
                                enable_custom_thunk_launchers=on)
        out: list = []
        exe = _rnn(c, out)
        exe.execute()
        src = exe.generated.source
        # locals are named v<store>; with launchers off every value goes through a store
        assert ("= None" in src) == on, src
        got[on] = out[0]
    np.testing.assert_array_equal(got[True], got[False])
    np.testing.assert_allclose(got[True], _eager(), rtol=1e-5, atol=1e-5)


def test_locals_run_again_and_step_by_step(cfg) -> None:  # noqa: ANN001
    """A second execute() and tick() reuse the same generated code: same result."""
    out: list = []
    exe = _rnn(all_passes(cfg), out)
    exe.execute()
    exe.reset()
    while exe.tick():
        pass
    assert len(out) == 2
    np.testing.assert_array_equal(out[0], out[1])


def test_bounds_are_bound_into_kernels() -> None:
    """A reshape to (T, 4) becomes a static reshape: the kernel takes only the tensor."""
    ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=1)
    ((_, T),) = ctx.variables_and_bounds
    op = ops.ReshapeOp(op_id=0, domain=ctx.universe, shape=Shape.from_((T, 4)))
    assert op.runtime_exprs()
    bound = bind_bounds(op, {T: 3})
    assert bound.runtime_exprs() == () and tuple(bound.shape) == (3, 4)
    k = TorchBackend().kernel(bound)
    assert tuple(k(torch.arange(12.0)).shape) == (3, 4)
    assert bind_bounds(bound, {T: 3}) is bound  # nothing left to bind
