"""Statify for reductions (ARCHITECTURE §5.4): sums, means, maxima (values and indices),
minima and logsumexp over a growing read `x[0:t+1]` or a window run as `TiledReduceOp`s
over static blocks of U points (the last padded with the reduction's neutral element),
agreeing with eager numpy on three backends for U below, not dividing and above T; the
backward's reverse-growing `g[t:T]` reads are tiled too and gradients match torch
autograd."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import index_expr as ie
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.index_expr import Slice
from tempo.core.ops_region import flat_ops
from tempo.core.sdg import SDG

T_, W = 11, 4
RNG = np.random.default_rng(3)
X = RNG.standard_normal((T_, 3, 2)).astype(np.float32)
Y = RNG.standard_normal((T_, 3, 2)).astype(np.float32)
N = RNG.integers(-50, 50, (T_, 3)).astype(np.int32)
X[4, 1, 0] = X[2, 1, 0]  # a tie: the first maximum's index wins


def _cfg(tmp_path: Any, backend: str, U: int, tile: bool = True) -> ExecutionConfig:
    return dataclasses.replace(
        ExecutionConfig.test_cfg(), backend=backend, path=str(tmp_path) + "/",
        enable_statifying_incrementalization=tile, inc_statify_block_size=U,
        enable_hybrid_tensorstore=True, enable_inplace_write=True, enable_lazy_slice=True,
        enable_gc=True, executor_debug_mode=False)


def _src(a: np.ndarray, t: Any) -> RT:
    data = torch.from_numpy(a)
    dt = dtypes.float32 if a.dtype == np.float32 else dtypes.int32
    return RT.source_with_ts_udf(lambda ts: data[ts[t]], tuple(a.shape[1:]), dt, domain=(t,))


def _numpy(v: Any) -> np.ndarray:
    return v.numpy() if isinstance(v, torch.Tensor) else np.asarray(v)


def _lo(t: int, window: int | None) -> int:
    return 0 if window is None else max(0, t - window + 1)


def _logsumexp(a: np.ndarray) -> np.ndarray:
    m = a.max(0)
    return np.log(np.exp(a - m).sum(0)) + m


REDUCTIONS = {
    "sum": (lambda x, y, n: x.sum(0), lambda x, y, n: x.sum(0)),
    "mean": (lambda x, y, n: x.mean(0), lambda x, y, n: x.mean(0)),
    "max": (lambda x, y, n: x.max(0)[0], lambda x, y, n: x.max(0)),
    "argmax": (lambda x, y, n: x.max(0)[1], lambda x, y, n: x.argmax(0)),
    "min_all": (lambda x, y, n: x.min(), lambda x, y, n: x.min()),
    "argmin_all": (lambda x, y, n: x.argmin(), lambda x, y, n: x.argmin()),
    "logsumexp": (lambda x, y, n: x.logsumexp(0), lambda x, y, n: _logsumexp(x)),
    "dot": (lambda x, y, n: (x * y).exp().sum((0, 2)),
            lambda x, y, n: np.exp(x * y).sum((0, 2))),
    "int_sum": (lambda x, y, n: n.sum(0), lambda x, y, n: n.sum(0)),
    "int_max": (lambda x, y, n: (n * 2).max(0)[0], lambda x, y, n: (n * 2).max(0)),
}


def _run(cfg: ExecutionConfig, window: int | None) -> tuple[dict[str, list], SDG]:
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: dict[str, list] = {k: [] for k in REDUCTIONS}
    with ctx:
        x, y, n = _src(X, t), _src(Y, t), _src(N, t)
        lo = 0 if window is None else ie.max(0, t - window + 1)
        for name, (ours, _) in REDUCTIONS.items():
            ours(x[lo: t + 1], y[lo: t + 1], n[lo: t + 1]).sink_udf(
                lambda v, name=name: got[name].append(_numpy(v).copy()))
    exe = ctx.compile({T: T_})
    exe.execute()
    return got, exe.sdg


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
@pytest.mark.parametrize("window", [None, W], ids=["growing", "window"])
@pytest.mark.parametrize("U", [1, 3, 16])
def test_tiled_reductions_match_numpy(backend: str, window: int | None, U: int,
                                      tmp_path: Any) -> None:
    got, sdg = _run(_cfg(tmp_path, backend, U), window)
    tiled = [op for op in flat_ops(sdg.ops.values()) if isinstance(op, ops.TiledReduceOp)]
    assert len(tiled) >= len(REDUCTIONS) and all(op.block == U for op in tiled)
    assert not _untiled_dynamic_reductions(sdg)
    for name, (_, ref) in REDUCTIONS.items():
        want = [ref(X[_lo(t, window): t + 1], Y[_lo(t, window): t + 1],
                    N[_lo(t, window): t + 1]) for t in range(T_)]
        np.testing.assert_allclose(np.stack(got[name]), np.stack(want), rtol=1e-5, atol=1e-5,
                                   err_msg=name)


def _untiled_dynamic_reductions(sdg: SDG) -> list[ops.Op]:
    """Sums and maxima still reading a range whose length varies, directly."""
    variables = {v.name for v in sdg.universe.variables}
    out = []
    for op in sdg.ops.values():
        if isinstance(op, ops.SumOp | ops.MaxOp):
            for e in sdg.in_edges[op.op_id]:
                sl = [m for m in e.expr if isinstance(m, Slice)]
                if sl and {s.name for s in sl[0].length().vars_used()} & variables:
                    out.append(op)
    return out


def test_statify_off_reduces_untiled(tmp_path: Any) -> None:
    got, sdg = _run(_cfg(tmp_path, "torch", 3, tile=False), None)
    assert not any(isinstance(op, ops.TiledReduceOp) for op in sdg.ops.values())
    want = [X[: t + 1].sum(0) for t in range(T_)]
    np.testing.assert_allclose(np.stack(got["sum"]), np.stack(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
@pytest.mark.parametrize("window", [None, W], ids=["growing", "window"])
def test_gradients_of_tiled_reductions(backend: str, window: int | None,
                                       tmp_path: Any) -> None:
    """A training program over growing reads: the forward's sum and max and the backward's
    reverse-growing `g[t:T]` reads run tiled; the weight gradient matches torch autograd."""
    Xd = RNG.standard_normal((T_, 4)).astype(np.float32)
    Wd = RNG.standard_normal((4, 4)).astype(np.float32)
    ctx = TempoContext(_cfg(tmp_path, backend, 3), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        x = _src(Xd, t)
        w = RT.const(Wd, requires_grad=True)
        lo = 0 if window is None else ie.max(0, t - window + 1)
        r = (x @ w).tanh()[lo: t + 1]
        (r.sum(0) * r.max(0)[0] + r.mean(0)).sum().backward()
    ctx.sdg.keep.add(w.grad.tensor_id)
    exe = ctx.compile({T: T_})
    exe.execute()
    backward_reads = [op for op in exe.sdg.ops.values() if isinstance(op, ops.TiledReduceOp)
                      and any(isinstance(m, Slice) and m.start.vars_used()
                              and not m.stop.vars_used()
                              for e in exe.sdg.in_edges[op.op_id] for m in e.expr)]
    assert backward_reads, "the backward's t:T reads are not tiled"
    assert not _untiled_dynamic_reductions(exe.sdg)
    tw = torch.from_numpy(Wd).requires_grad_(True)
    th = (torch.from_numpy(Xd) @ tw).tanh()
    total = sum((th[_lo(i, window): i + 1].sum(0) * th[_lo(i, window): i + 1].max(0)[0]
                 + th[_lo(i, window): i + 1].mean(0)).sum() for i in range(T_))
    total.backward()  # type: ignore[union-attr]
    torch.testing.assert_close(exe.get_spatial_tensor_torch(w.grad.tensor_id), tw.grad,
                               rtol=1e-4, atol=1e-5)


def test_jax_backward_compiles_a_constant_number_per_bound(tmp_path: Any) -> None:
    """The backward of a growing sum, mean and max on jax: the sums' and the max's
    gradients are padded at the static bound and the `g[t:T]` reads tiled, so a run at a
    new T compiles the same few kernels (those whose shape holds T), not one set per step
    (untiled: 96, 111 and 223 compilations at T = 8, 16, 32)."""
    from jax._src.interpreters import pxla

    counted = [0]
    compile_ = pxla._cached_compilation

    def counting(*args: Any, **kw: Any) -> Any:
        counted[0] += 1
        return compile_(*args, **kw)

    Xd = RNG.standard_normal((32, 4)).astype(np.float32)
    Wd = RNG.standard_normal((4, 4)).astype(np.float32)

    def run(steps: int) -> int:
        ctx = TempoContext(_cfg(tmp_path, "jax", 4), num_dims=1)
        ((t, T),) = ctx.variables_and_bounds
        with ctx:
            w = RT.const(Wd, requires_grad=True)
            r = (_src(Xd, t) @ w).tanh()[0: t + 1]
            (r.sum(0) * r.max(0)[0] + r.mean(0)).sum().backward()
        exe = ctx.compile({T: steps})
        counted[0] = 0
        exe.execute()
        return counted[0]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pxla, "_cached_compilation", counting)
        counts = [run(steps) for steps in (8, 16, 32)]
    assert counts[2] == counts[1] < 16, counts
