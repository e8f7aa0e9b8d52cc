"""No leaks across long runs: a training program (MLP, SGD with momentum, loss.backward())
runs 1,000 iterations as 100 execute/reset cycles of 10 iterations, and as one execute of
1,000 iterations. Live stored bytes must come back to the same baseline after every reset
and stay bounded within a run; process RSS and the count of Python objects must stay flat
after warm-up (RSS within 5%)."""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path
from typing import Any

import psutil
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn import Linear
from tempo.api.nn.init import const_init
from tempo.api.optim.optim import SGD
from tempo.core.configs import ExecutionConfig

B, D_IN, HID, D_OUT = 8, 4, 16, 2
RSS_TOLERANCE = 0.05
OBJECT_GROWTH = 500  # Python objects: a per-iteration leak over 900 iterations exceeds this


def training_program(cfg: ExecutionConfig, iters: int, on_loss: Any) -> tuple[Any, Any]:
    """Linear -> tanh -> Linear regression trained with SGD over iterations `i`; `on_loss`
    sees every iteration's loss. Returns (executor, loss tensor)."""
    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(B, D_IN, generator=g), torch.randn(B, D_OUT, generator=g)
    ctx = TempoContext(cfg, num_dims=1, dim_names=("i",))
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        w1, w2 = torch.randn(HID, D_IN, generator=g), torch.randn(D_OUT, HID, generator=g)
        l1 = Linear(D_IN, HID, domain=(i,), w_init_fun=const_init(w1 / 2))
        l2 = Linear(HID, D_OUT, domain=(i,), w_init_fun=const_init(w2 / 4))
        loss = ((l2(l1(RT.const(X.numpy())).tanh()) - RT.const(Y.numpy())) ** 2).mean()
        loss.backward()
        SGD(l1.parameters + l2.parameters, lr=0.05, momentum=0.5).step()
        loss.sink_with_ts_udf(lambda v, ts: on_loss(float(v), ts[i]))
    return ctx.compile({I: iters}), loss


def _cfg(tmp_path: Path, gc_on: bool = True) -> ExecutionConfig:
    """The default pipeline (GC and optimisations on) on CPU/torch, or the test pipeline
    (nothing freed before reset), with stores tracked so memory_stats() reports live and
    peak bytes (the cap is far above the need)."""
    base = ExecutionConfig.default() if gc_on else ExecutionConfig.test_cfg()
    return dataclasses.replace(base, dev="cpu", backend="torch", path=str(tmp_path) + "/",
                               device_memory_cap_bytes=1 << 30)


def _rss() -> int:
    gc.collect()
    return int(psutil.Process().memory_info().rss)


def _objects() -> int:
    gc.collect()
    return len(gc.get_objects())


@pytest.mark.parametrize("gc_on", [True, False], ids=["gc", "no_gc"])
def test_1000_iterations_as_execute_reset_cycles(tmp_path: Path, gc_on: bool) -> None:
    losses: list[float] = []
    exe, _ = training_program(_cfg(tmp_path, gc_on), 10, lambda v, k: losses.append(v))
    baseline = exe.memory_stats()["live_bytes"]
    after_reset, rss, objects = [], [], []
    for cycle in range(100):
        exe.execute()
        if not gc_on:  # everything is still stored: the reset below has work to do
            assert exe.memory_stats()["live_bytes"] > baseline
        exe.reset()
        after_reset.append(exe.memory_stats()["live_bytes"])
        if cycle in (9, 99):  # after warm-up, and at the end
            rss.append(_rss())
            objects.append(_objects())
    assert len(losses) == 1000
    assert losses[9] < losses[0]  # it trains, and each cycle starts again from the same
    assert losses[:10] == losses[-10:]  # weights: nothing carries over a reset
    assert set(after_reset) == {baseline}, "live bytes do not return to the baseline"
    assert abs(rss[1] - rss[0]) <= RSS_TOLERANCE * rss[0], rss
    assert objects[1] - objects[0] <= OBJECT_GROWTH, objects


def test_one_execute_of_1000_iterations(tmp_path: Path) -> None:
    seen: dict[int, tuple[int, int, int]] = {}
    holder: dict[str, Any] = {}
    losses: list[float] = []

    def on_loss(v: float, k: int) -> None:
        losses.append(v)
        if k in (99, 999):  # after warm-up, and at the last iteration
            seen[k] = (holder["exe"].memory_stats()["live_bytes"], _rss(), _objects())

    exe, _ = training_program(_cfg(tmp_path), 1000, on_loss)
    holder["exe"] = exe
    baseline = exe.memory_stats()["live_bytes"]
    exe.execute()
    assert len(losses) == 1000 and losses[-1] < losses[0]
    (live0, rss0, obj0), (live1, rss1, obj1) = seen[99], seen[999]
    assert live1 <= live0, "live bytes grow with the iteration count"
    assert abs(rss1 - rss0) <= RSS_TOLERANCE * rss0, (rss0, rss1)
    assert obj1 - obj0 <= OBJECT_GROWTH, (obj0, obj1)
    exe.reset()
    assert exe.memory_stats()["live_bytes"] == baseline
