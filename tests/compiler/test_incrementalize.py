"""The incrementalisation pass (ARCHITECTURE §5.5): a tensor above the threshold is computed
in blocks of rows over a new dimension. Results against eager torch on torch, jax and numpy;
the graph checked for the block dimension; the stores' own accountant shows the peak fall."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from programs import Program, memory_mode, run_plain

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn import Linear
from tempo.api.nn.init import const_init
from tempo.api.optim.optim import SGD
from tempo.compiler.passes.incrementalize import DIM_HINT, blocks
from tempo.core.dtype import dtypes
from tempo.core.ops_region import RegionOp, flat_ops
from tempo.core.sdg import TensorId

T_, N, F, H = 3, 48, 8, 32
RNG = np.random.default_rng(0)
X = RNG.standard_normal((T_, N, F)).astype(np.float32)
W = RNG.standard_normal((F, H)).astype(np.float32)
V = RNG.standard_normal((H,)).astype(np.float32)
BACKENDS = ("torch", "jax", "numpy")


def _cfg(cfg: Any, backend: str = "torch", threshold: int = N * H, **kw: Any) -> Any:
    """All passes, tracked memory; incrementalisation of tensors above `threshold` bytes
    (by default a quarter of an (N, H) float tensor)."""
    kw = {"enable_incrementalization": True, **kw}
    return dataclasses.replace(memory_mode(cfg), backend=backend,
                               incrementalize_mem_threshold=threshold, **kw)


def _x(t: Any) -> RT:
    return RT.source_with_ts_udf(lambda ts: X[ts[t]], (N, F), dtypes.float32, domain=(t,))


def _run(cfg: Any, build: Callable[..., dict[str, RT]]) -> tuple[dict[str, torch.Tensor], Any]:
    return run_plain(cfg, Program(1, build, {0: T_}), {})


def _block_dims(exe: Any) -> list[str]:
    return [v.name for v in exe.sdg.universe.variables if v.name.startswith(DIM_HINT)]


def _mlp_loss(tT):  # noqa: ANN001, ANN202
    t, _ = tT
    h = (_x(t) @ RT.const(W)).relu()
    return {"loss": (h * RT.const(V)).sum()}


def _mlp_want() -> torch.Tensor:
    x, w, v = (torch.from_numpy(a) for a in (X, W, V))
    return ((x @ w).relu() * v).sum((1, 2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_loss_over_a_large_batch_is_summed_in_blocks(cfg: Any, backend: str) -> None:
    res, exe = _run(_cfg(cfg, backend), _mlp_loss)
    torch.testing.assert_close(res["loss"], _mlp_want(), rtol=1e-5, atol=1e-4)
    assert len(_block_dims(exe)) == 1
    # the matmul runs per block: one of its dims is a block of the rows
    mm = [op for op in flat_ops(exe.sdg.ops.values()) if op.name == "matmul"]
    assert mm and all(op.domain.variables[-1].name.startswith(DIM_HINT) for op in mm)


def test_peak_memory_falls(cfg: Any) -> None:
    plain, off = _run(_cfg(cfg, enable_incrementalization=False), _mlp_loss)
    res, on = _run(_cfg(cfg), _mlp_loss)
    torch.testing.assert_close(res["loss"], plain["loss"], rtol=1e-5, atol=1e-4)
    big = T_ * N * H * 4  # the (T, N, H) activations, batched over t
    assert off.memory_stats()["peak_bytes"] > big
    assert on.memory_stats()["peak_bytes"] < off.memory_stats()["peak_bytes"] - big // 2


def test_off_below_the_threshold(cfg: Any) -> None:
    _, exe = _run(_cfg(cfg, threshold=T_ * N * H * 4), _mlp_loss)
    assert _block_dims(exe) == []


def test_batched_matmul_broadcast_weights_and_inner_sums(cfg: Any) -> None:
    """The rows of a batched matmul (its batch dim), operands broadcast along the rows, a
    sum over another dim inside the region, and a max outside it read whole (the blocks
    put back together)."""
    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = _x(t).reshape((4, N // 4, F))            # (4, 12, 8)
        a = (x @ RT.const(W)).tanh()                  # (4, 12, 32)
        s = (a * a).sum(2)                            # (4, 12) inside the region
        b = (a + 1.0) * 2.0
        return {"total": (s * s).sum((0, 1)), "col": b.sum(1), "m": (b * 0.5).max(2)[0]}

    xt = torch.from_numpy(X).reshape(T_, 4, N // 4, F)
    a = (xt @ torch.from_numpy(W)).tanh()
    s = (a * a).sum(3)
    b = (a + 1.0) * 2.0
    res, exe = _run(_cfg(cfg, threshold=4 * N * H), build)
    torch.testing.assert_close(res["total"], (s * s).sum((1, 2)), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(res["col"], b.sum(2), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(res["m"], (b * 0.5).max(3)[0], rtol=1e-5, atol=1e-5)
    assert _block_dims(exe)


def test_block_count_divides_the_rows_and_honours_the_percentile(cfg: Any) -> None:
    c = _cfg(cfg, threshold=100, incrementalization_percentile=20)
    assert blocks(48, 1000, c) == 12    # >= 5 blocks, and 1000/K <= 100 B
    assert blocks(48, 100, c) == 6      # >= 5 blocks: the least divisor of 48 from 5
    assert blocks(7, 10_000, c) == 7    # a prime: one row per block
    assert blocks(48, 10**9, c) == 48   # the threshold cannot be met: one row per block
    assert blocks(48, 100, dataclasses.replace(c, incrementalization_percentile=0)) == 48


def _learner(cfg: Any, batch: int = 512, hid: int = 64, iters: int = 3) -> tuple[list, Any]:
    """Linear -> tanh -> Linear regression over one large batch, trained with SGD over
    iterations `i` (the E6 learner's shape): the (batch, hid) activations and their
    gradients are the large tensors. Returns every iteration's loss and the executor."""
    x, y, w1, w2 = _learner_data(batch, hid)
    losses: list[float] = []
    ctx = TempoContext(cfg, num_dims=1, dim_names=("i",))
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        l1 = Linear(8, hid, domain=(i,), w_init_fun=const_init(w1))
        l2 = Linear(hid, 2, domain=(i,), w_init_fun=const_init(w2))
        xs = RT.source_with_ts_udf(lambda ts: x * 1.0, (batch, 8), dtypes.float32, domain=(i,))
        loss = ((l2(l1(xs).tanh()) - RT.const(y.numpy())) ** 2).mean()
        loss.backward()
        SGD(l1.parameters + l2.parameters, lr=0.05).step()
        loss.sink_udf(lambda v: losses.append(float(v)))
    exe = ctx.compile({I: iters})
    exe.execute()
    return losses, exe


def _learner_data(batch: int, hid: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return (torch.randn(batch, 8, generator=g), torch.randn(batch, 2, generator=g),
            torch.randn(hid, 8, generator=g) / 2, torch.randn(2, hid, generator=g) / 4)


def _eager_losses(batch: int = 512, hid: int = 64, iters: int = 3) -> list[float]:
    x, y, w1, w2 = _learner_data(batch, hid)
    l1, l2 = torch.nn.Linear(8, hid), torch.nn.Linear(hid, 2)
    with torch.no_grad():
        for lin, w in ((l1, w1), (l2, w2)):
            lin.weight.copy_(w)
            lin.bias.zero_()
    opt = torch.optim.SGD([*l1.parameters(), *l2.parameters()], lr=0.05)
    out = []
    for _ in range(iters):
        loss = ((l2(l1(x).tanh()) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_learner_over_a_large_batch_matches_eager_training(cfg: Any, backend: str) -> None:
    """The batch is split: forward activations, their gradients and the weight gradients
    (`x^T @ g`, a matmul contracting the rows) run per block; losses equal eager torch."""
    losses, exe = _learner(_cfg(cfg, backend, threshold=512 * 64 * 4 // 8))
    _, off = _learner(_cfg(cfg, backend, enable_incrementalization=False))
    assert _block_dims(exe)
    tanh = [op for op in flat_ops(exe.sdg.ops.values()) if op.describe() == "tanh"]
    loose = [op for op in tanh if op.op_id in exe.sdg.ops]
    fused = [r for r in exe.sdg.ops.values() if isinstance(r, RegionOp)
             and any(m.describe() == "tanh" for m in r.body)]  # regions form under a cap
    assert tanh and all(exe.sdg.tensors[TensorId(op.op_id, 0)].shape[0] < 512 for op in loose)
    assert all(0 < r.elements < 512 * 64 for r in fused)  # its largest value is one block
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(_eager_losses()),
                               rtol=1e-5, atol=1e-6)
    assert exe.memory_stats()["peak_bytes"] < off.memory_stats()["peak_bytes"] / 2


def test_stacked_observations_are_sliced_where_each_step_is_made() -> None:
    """PPO's learner reads every step's observation (`o[b, i, 0:T]`); split along the
    observation's features, each step is sliced where it is made (a slice over the step
    dim and the block dim) instead of each block stacking all steps whole and slicing the
    stack. The losses equal the run without incrementalisation (the first is bit for bit)."""
    from tempo.bench.baselines.ppo_cleanrl import DEFAULTS
    from tempo.bench.systems import ppo_tempo
    from tempo.bench.timing import StatsLogger
    from tempo.core import ops

    c = dict(DEFAULTS, num_layers=1, params_per_layer=8, ep_len=8, num_envs=4,
             obs_shape=[3, 16, 16], iterations=2, seed=0)

    def run(**mem: Any) -> tuple[Any, list[float]]:
        logger = StatsLogger()
        ctx, bounds = ppo_tempo._program(c, "torch", logger,
                                         {"device_memory_cap_bytes": 1 << 40, **mem})
        exe = ctx.compile(bounds)
        exe.execute()
        return exe, [logger.rows[i]["loss"] for i in sorted(logger.rows)]

    _, plain = run(enable_incrementalization=False)
    exe, blocked = run(incrementalize_mem_threshold=16 << 10)
    np.testing.assert_allclose(blocked, plain, rtol=1e-6)
    assert blocked[0] == plain[0]
    names = [[v.name for v in op.domain.variables] for op in flat_ops(exe.sdg.ops.values())
             if isinstance(op, ops.SliceOp)]
    assert any("d2" in n and any(x.startswith(DIM_HINT) for x in n) for n in names)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_region_over_an_earlier_block_dim_reads_another_regions_blocks(backend: str) -> None:
    """Three regions: p in 8 blocks (block dim inc0), q summed over its 2 rows in 2 blocks
    (inc1: s sums the per-block sums, q[inc1][0:2]), then s's 64 rows in 8 blocks, reusing
    inc0. Each block of s sums a slice of the per-block sums, a tensor over (inc0, inc1) --
    the domain keeps universe order, so its read is [inc0, 0:2]; it was written [0:2, inc0]
    (the block dim appended last), and compiling raised an IndexExprError naming inc0 and
    INC1 (accept6 c05 with incrementalize_mem_threshold=64)."""
    from tempo.core.configs import ExecutionConfig

    rng = np.random.default_rng(0)
    p_in = rng.standard_normal((8, 64)).astype(np.float32)
    q_in = rng.standard_normal((2, 4, 16)).astype(np.float32)
    cfg = ExecutionConfig(dev="cpu", backend=backend, incrementalize_mem_threshold=64)
    got: list[np.ndarray] = []
    ctx = TempoContext(cfg, num_dims=0)
    with ctx:
        p = (RT.const(p_in) * 2.0).tanh()
        s = RT.const(q_in).exp().reshape((2, 64)).sum(0)
        (p.sum() + (s * 3.0).sin().sum()).sink_udf(lambda v: got.append(np.asarray(v)))
    exe = ctx.compile({})
    exe.execute()
    want = np.tanh(p_in * 2).sum(dtype=np.float64) + \
        np.sin(np.exp(q_in.astype(np.float64)).reshape(2, 64).sum(0) * 3).sum()
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)
    assert len(_block_dims(exe)) == 2
