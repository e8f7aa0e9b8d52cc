"""Backprop through time of `h[t+1] = f(h @ W)` with nothing else feeding the recurrence
(acceptance r24). The forward step at t reads h at t - 1 and the backward step at t reads
the gradient at t + 1: a region holding both would need its own point t - 1 and t + 1,
so no order exists. The grouping pass joined them ('could not find an order ... a bug in
Tempo's compiler' unless enable_dataflow_grouping=False); the gradient must equal torch
autograd's."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.compiler.passes.grouping import region_members
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

T_, B_, H = 6, 3, 4
RNG = np.random.default_rng(0)
W0 = (RNG.standard_normal((H, H)) * 0.5).astype(np.float32)
H0 = (RNG.standard_normal((B_, H)) * 0.5).astype(np.float32)
CONFIGS = [(backend, on) for backend in ("torch", "jax", "numpy") for on in (True, False)]


def config(backend: str, on: bool) -> ExecutionConfig:
    """The default config, with vectorisation and fusion both on or both off."""
    return dataclasses.replace(ExecutionConfig(dev="cpu", backend=backend),
                               enable_vectorization=on, enable_fusion=on)


def run(backend: str, on: bool, fn: str, batched: bool) -> tuple[dict[str, np.ndarray], Any]:
    """Loss = sum over t (and b) of h; returns the loss and W's gradient."""
    ctx = TempoContext(config(backend, on), num_dims=2 if batched else 1)
    got: dict[str, np.ndarray] = {}
    with ctx:
        if batched:
            (b, B), (t, T) = ctx.variables_and_bounds
            dom: tuple = (b, t)
        else:
            ((t, T),) = ctx.variables_and_bounds
            dom = (t,)
        W = RT.const(W0, requires_grad=True)
        h = RT.placeholder((H,), dtypes.float32, domain=dom)
        if batched:
            h[b, 0] = RT.const(H0)[b]
            h[b, t + 1] = getattr(h @ W, fn)()
        else:
            h[0] = RT.const(H0[0])
            h[t + 1] = getattr(h @ W, fn)()
        loss = h.sum()
        loss.backward()
        assert W.grad is not None
        W.grad.sink_udf(lambda g: got.__setitem__("grad", np.asarray(g)))
        whole = loss[0:B, 0:T] if batched else loss[0:T]
        whole.sink_udf(lambda v: got.__setitem__("loss", np.asarray(v).sum()))
    exe = ctx.compile({B: B_, T: T_} if batched else {T: T_})
    exe.execute()
    return got, exe


def reference(fn: str, batched: bool) -> tuple[float, np.ndarray]:
    w = torch.tensor(W0, requires_grad=True)
    hs = [torch.tensor(H0 if batched else H0[0])]
    for _ in range(T_ - 1):
        hs.append(getattr(torch, fn)(hs[-1] @ w))
    loss = torch.stack(hs).sum()
    loss.backward()
    assert w.grad is not None
    return float(loss.detach()), w.grad.numpy()


@pytest.mark.parametrize("batched", [False, True], ids=["t", "b-t"])
@pytest.mark.parametrize("fn", ["tanh", "exp", "sigmoid"])
@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_bptt_of_a_plain_nonlinear_recurrence(backend: str, on: bool, fn: str,
                                              batched: bool) -> None:
    got, exe = run(backend, on, fn, batched)
    loss, grad = reference(fn, batched)
    np.testing.assert_allclose(got["loss"], loss, rtol=1e-5)
    np.testing.assert_allclose(got["grad"], grad, rtol=1e-4, atol=1e-5)
    if on:  # the forward step and the backward step are each still fused
        regions = list(region_members(exe.sdg))
        assert len(regions) >= 2, regions


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_joins_asked_after_the_search_effort_is_spent_are_refused(
        backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The grouping pass's cycle searches share one effort budget (`Tuning.grouping_effort`,
    grouping_cycles.Work): a Llama fine-tune spent 7 of its 8 CPU-s compile there. Spent,
    every join that needs a search is refused: fewer members fused, the same gradient."""
    from tempo.compiler.passes import grouping
    from tempo.core.configs import TUNING, tuned

    made: list[Any] = []

    class Recorded(grouping.Work):  # type: ignore[misc, name-defined]
        def __init__(self, limit: int) -> None:
            super().__init__(limit)
            made.append(self)

    monkeypatch.setattr(grouping, "Work", Recorded)
    loss, grad = reference("tanh", True)
    fused = {}
    for effort in (TUNING.grouping_effort, 0):
        made.clear()
        with tuned(grouping_effort=effort):
            got, exe = run(backend, True, "tanh", True)
        np.testing.assert_allclose(got["loss"], loss, rtol=1e-5)
        np.testing.assert_allclose(got["grad"], grad, rtol=1e-4, atol=1e-5)
        fused[effort] = sum(len(r.body) for r in region_members(exe.sdg))
        used = max(w.limit - w.left for w in made)
        refused = sum(w.refused for w in made)
        if effort:
            assert 0 < used < effort and refused == 0  # it searched, within the budget
        else:
            assert refused > 0
    assert fused[0] < fused[TUNING.grouping_effort], fused
