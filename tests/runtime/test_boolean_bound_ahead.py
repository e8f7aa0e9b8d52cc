"""Reads that depend on where a boolean bound ends the dimension (API §7 item 10), found by
acceptance accept6b c08: a recurrence backwards over the ended dimension (returns
G[T-1] = x, G[t] = x + 0.5 G[t+1]) crashed at run time (its recursive branch ran at the real
T - 1 and read G[T]); a read x[min(t+1, T-1)] gave x[t+1] at the last point (T was still the
maximum when it ran); backward() through the dimension raised a bare KeyError: T."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

X = np.array([[0.5, 0.7, 0.9, 1.1, 0.3, 0.2, 0.1, 0.4, 0.3],
              [0.1, 0.2, 0.1, 0.3, 0.9, 0.8, 0.2, 0.6, 0.5]], np.float32)
LIMIT = 2.0
CONFIGS = [(be, v) for be in ("torch", "jax", "numpy") for v in ("default", "test")]


def _cfg(backend: str, variant: str) -> ExecutionConfig:
    if variant == "test":
        return dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend)
    return ExecutionConfig(dev="cpu", backend=backend)


def _lengths() -> list[int]:
    return [int(np.argmax(np.cumsum(r) > LIMIT)) + 1 for r in X]


def _v(v) -> float:
    return float(np.asarray(v.cpu() if hasattr(v, "cpu") else v))


@pytest.mark.parametrize(("backend", "variant"), CONFIGS)
def test_returns_and_reads_at_the_real_end(backend: str, variant: str) -> None:
    ctx = TempoContext(_cfg(backend, variant), dim_names=("i", "t"))
    (i, I_), (t, T) = ctx.variables_and_bounds
    log: dict[str, list] = {"G": [], "fut": []}
    with ctx:
        x = RT.const(X).index(0, i).index(0, t)
        acc = RT.placeholder((), dtypes.float32, domain=(i, t))
        acc[i, 0] = x
        acc[i, t + 1] = acc + x[i, t + 1]
        g = RT.placeholder((), dtypes.float32, domain=(i, t))
        g[i, T - 1] = x
        g[True] = x + 0.5 * g[i, t + 1]
        fut = x[i, ie.min(t + 1, T - 1)]
        g.sink_with_ts_udf(lambda v, ts: log["G"].append((ts[i], ts[t], _v(v))))
        fut.sink_with_ts_udf(lambda v, ts: log["fut"].append((ts[i], ts[t], _v(v))))
    ctx.compile({I_: 2, T: acc > LIMIT}).execute()
    want_g, want_f = [], []
    for ii, n in enumerate(_lengths()):
        acc_g = 0.0
        for tt in reversed(range(n)):
            acc_g = float(X[ii, tt]) + 0.5 * acc_g
            want_g.append((ii, tt, acc_g))
        want_f += [(ii, tt, float(X[ii, min(tt + 1, n - 1)])) for tt in range(n)]
    for k, want in (("G", want_g), ("fut", want_f)):
        np.testing.assert_allclose(np.array(sorted(log[k])), np.array(sorted(want)), rtol=1e-5)


@pytest.mark.parametrize(("backend", "variant"), CONFIGS)
def test_gradient_through_an_ended_dimension(backend: str, variant: str) -> None:
    """One ended dimension. Under ExecutionConfig.test_cfg() the adjoint of h (T + 1
    points, `h[t+1] = ...`) was guarded by t < T outside the loop ending t, so its point T
    was never made and the adjoint of h[T-1] read it (KeyError (3,), accept6b failure 3):
    bound_tails now also finds ops running past the bound (t < T + 1)."""
    ctx = TempoContext(_cfg(backend, variant), dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    got: list[float] = []
    with ctx:
        s = RT.const(np.float32(1.3), requires_grad=True)
        x = RT.const(X[0]).index(0, t)
        acc = RT.placeholder((), dtypes.float32, domain=(t,))
        acc[0] = x
        acc[t + 1] = acc + x[t + 1]
        h = RT.placeholder((), dtypes.float32, domain=(t,))
        h[0] = x * s
        h[t + 1] = (h * s + x[t + 1]).tanh()
        h[0:T].sum(0).backward()
        s.grad.sink_udf(lambda v: got.append(_v(v)))
    ctx.compile({T: acc > LIMIT}).execute()
    sv = torch.tensor(1.3, requires_grad=True)
    h = float(X[0, 0]) * sv
    tot = h
    for tt in range(1, _lengths()[0]):
        h = torch.tanh(h * sv + float(X[0, tt]))
        tot = tot + h
    tot.backward()
    assert got == pytest.approx([float(sv.grad)], rel=1e-5)


@pytest.mark.parametrize(("backend", "variant"), CONFIGS)
def test_a_gradient_across_episodes_that_end_apart_is_unsupported(backend: str,
                                                                 variant: str) -> None:
    """With done over (i, t) each i has its own T. The gradient of a parameter over ()
    sums every (i, t) point, a read g[0:I, 0:T] that forms no rectangle (T there is the
    last i's): a KeyError at run time when an earlier episode is longer (here 3 and 6
    points), or silently missing points when it is shorter. Now an UnsupportedError at
    the backward() line, naming the dims."""
    from tempo.core.errors import UnsupportedError

    ctx = TempoContext(_cfg(backend, variant), dim_names=("i", "t"))
    (i, I_), (t, T) = ctx.variables_and_bounds
    with ctx:
        s = RT.const(np.float32(1.3), requires_grad=True)
        x = RT.const(X).index(0, i).index(0, t)
        acc = RT.placeholder((), dtypes.float32, domain=(i, t))
        acc[i, 0] = x
        acc[i, t + 1] = acc + x[i, t + 1]
        h = RT.placeholder((), dtypes.float32, domain=(i, t))
        h[i, 0] = x * s
        h[i, t + 1] = (h * s + x[i, t + 1]).tanh()
        h[i, 0:T].sum(0)[0:I_].sum(0).backward()
        s.grad.sink_udf(lambda v: None)
    with pytest.raises(UnsupportedError) as err:
        ctx.compile({I_: 2, T: acc > LIMIT})
    msg = str(err.value)
    assert "backward()" in msg and "test_boolean_bound_ahead.py" in msg
    assert "ends separately for each i" in msg and "[0:I, 0:T]" in msg
