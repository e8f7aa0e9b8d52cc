"""torch regions run tanh's gradient `g * (1 - y*y)` as one `tanh_backward(g, y)` (the
grouping pass tags the outer mul: `grouping_folds.tanh_grad_tag`; the runtime folds it:
`region_folds`): a tanh MLP's values and weight gradients against torch eager on torch,
jax and numpy, with vectorisation (the learner's batched backward: folded) and without;
the kernel against float64; and the near misses that must keep their three calls (a
constant other than 1, two different factors, a broadcast `y`) with numpy's values.
Likewise the batched gradient into a trunk under two scalar heads, `g_v * w_v + g_p * w_p`
(columns times rows), runs as one K = 2 matmul (`grouping_folds.outer_sum_tag`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from programs import all_passes

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn.linear import Linear
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.ops_region import OUTER_SUM, OUTER_SUM_TAGS, TANH_GRAD, RegionOp
from tempo.runtime import region_folds

T_, M, K, H = 4, 5, 6, 8
RNG = np.random.default_rng(5)
X = RNG.standard_normal((T_, M, K)).astype(np.float32)
G = RNG.standard_normal((T_, M, H)).astype(np.float32)
Z = RNG.standard_normal((T_, M, H)).astype(np.float32)
U = RNG.standard_normal((T_, M, H)).astype(np.float32)
W1, B1 = (RNG.standard_normal((H, K)).astype(np.float32),
          RNG.standard_normal(H).astype(np.float32))
W2, B2 = (RNG.standard_normal((H, H)).astype(np.float32),
          RNG.standard_normal(H).astype(np.float32))


def _config(backend: str, vec: bool) -> ExecutionConfig:
    cfg = all_passes(ExecutionConfig.test_cfg())
    return dataclasses.replace(cfg, backend=backend, enable_vectorization=vec)


def _source(a: np.ndarray, t: Any) -> RT:
    return RT.source_with_ts_udf(lambda ts: a[ts[t]], a.shape[1:], dtypes.float32,
                                 domain=(t,), lazy_vectorized_version=lambda d, n: lambda ts: a)


def _const(v: np.ndarray) -> Any:
    return lambda shape, dtype, domain: RT.const(v)


def _regions(exe: Any) -> list[RegionOp]:
    return [op for op in exe.sdg.ops.values() if isinstance(op, RegionOp)]


def _mlp(backend: str, vec: bool) -> tuple[dict[str, np.ndarray], list[RegionOp]]:
    ctx = TempoContext(_config(backend, vec), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: dict[str, list[np.ndarray]] = {"y": [], "w1": [], "b1": [], "w2": []}

    def keep(name: str) -> Any:
        return lambda v: got[name].append(np.asarray(v).copy())

    with ctx:
        l1 = Linear(K, H, w_init_fun=_const(W1), b_init_fun=_const(B1))
        l2 = Linear(H, H, w_init_fun=_const(W2), b_init_fun=_const(B2))
        y = l2(l1(_source(X, t)).tanh()).tanh()
        y.sink_udf(keep("y"))
        ((y * y).sum() + y.sum()).backward()
        for name, p in (("w1", l1.w), ("b1", l1.b), ("w2", l2.w)):
            p.grad.sink_udf(keep(name))
    exe = ctx.compile({T: T_})
    exe.execute()
    out = {"y": np.stack(got["y"]).reshape(T_, M, H)}
    out.update({k: got[k][-1] for k in ("w1", "b1", "w2")})
    return out, _regions(exe)


def _reference() -> dict[str, np.ndarray]:
    w1, b1, w2 = (torch.tensor(v, requires_grad=True) for v in (W1, B1, W2))
    h = torch.tanh(torch.from_numpy(X) @ w1.T + b1)
    y = torch.tanh(torch.nn.functional.linear(h, w2, torch.from_numpy(B2)))
    ((y * y).sum() + y.sum()).backward()
    return {"y": y.detach().numpy(), "w1": w1.grad.numpy(), "b1": b1.grad.numpy(),
            "w2": w2.grad.numpy()}


@pytest.mark.parametrize("vec", [True, False], ids=["vec", "loop"])
@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_tanh_mlp_values_and_gradients(backend: str, vec: bool) -> None:
    got, regs = _mlp(backend, vec)
    want = _reference()
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=2e-5, err_msg=k)
    tagged = [m for r in regs for m in r.body if TANH_GRAD in m.tags]
    assert len(tagged) >= 2, "both layers' tanh gradients are tagged"
    if backend == "torch":
        folds = [f for r in regs for f in region_folds.torch_folds(r).values()
                 if f.kind == TANH_GRAD]
        assert len(folds) == len(tagged), (len(folds), len(tagged))
        assert all(len(f.reads) == 2 for f in folds)


def test_the_kernel_is_tanh_backward_and_as_accurate() -> None:
    """tanh_backward rounds `1 - y*y` inside one pass, the three calls round each step:
    equal up to an ulp or so, and no farther from float64 (in half precision tanh_backward
    computes in float32, closer still)."""
    kernel = region_folds.fold_kernel(TANH_GRAD)
    gen = torch.Generator().manual_seed(3)
    for dt, tol in ((torch.float32, 3e-7), (torch.float64, 1e-15), (torch.float16, 2e-3)):
        g = torch.randn(64, 64, 1, 64, generator=gen).to(dt)
        y = torch.tanh(2.0 * torch.randn(64, 64, 1, 64, generator=gen)).to(dt)
        got = kernel(g, y)
        three = torch.mul(g, torch.sub(torch.tensor(1.0, dtype=dt), torch.mul(y, y)))
        exact = g.double() * (1.0 - y.double() * y.double())
        assert got.dtype == dt and got.shape == g.shape
        err, err3 = ((v.double() - exact).abs().max().item() for v in (got, three))
        assert err <= tol and err <= err3, (dt, err, err3)


def _near_miss(backend: str, fn: Callable[[RT, RT, RT], RT]) -> tuple[np.ndarray, list[RegionOp]]:
    ctx = TempoContext(_config(backend, False), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    out: list[np.ndarray] = []
    with ctx:
        g, y, z = _source(G, t), _source(U, t).tanh(), _source(Z, t)
        fn(g, y, z).sink_udf(lambda v: out.append(np.asarray(v).copy()))
    exe = ctx.compile({T: T_})
    exe.execute()
    return np.stack(out), _regions(exe)


NEAR_MISSES: dict[str, tuple[Callable[[RT, RT, RT], RT], Callable[..., np.ndarray]]] = {
    "the_gradient": (lambda g, y, z: g * (1.0 - y * y),
                     lambda g, y, z: g * (1.0 - y * y)),
    "two_minus": (lambda g, y, z: g * (2.0 - y * y), lambda g, y, z: g * (2.0 - y * y)),
    "y_times_z": (lambda g, y, z: g * (1.0 - y * z), lambda g, y, z: g * (1.0 - y * z)),
    "broadcast_y": (lambda g, y, z: g * (1.0 - y.mean(0) * y.mean(0)),
                    lambda g, y, z: g * (1.0 - y.mean(0) * y.mean(0))),
}


@pytest.mark.parametrize("case", list(NEAR_MISSES))
@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_only_the_tanh_gradient_is_folded(case: str, backend: str) -> None:
    fn, ref = NEAR_MISSES[case]
    y_np = np.tanh(U)
    want = np.stack([ref(G[i], y_np[i], Z[i]) for i in range(T_)])
    got, regs = _near_miss(backend, fn)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-6, atol=1e-6)
    tagged = any(TANH_GRAD in m.tags for r in regs for m in r.body)
    assert tagged == (case == "the_gradient"), regs


WV, WP = (RNG.standard_normal((H, 1)).astype(np.float32) for _ in range(2))


def _two_heads(backend: str, vec: bool) -> tuple[dict[str, np.ndarray], list[RegionOp]]:
    """A tanh trunk under two scalar heads (PPO's value and mean): the trunk's gradient is
    `g_v * w_v^T + g_p * w_p^T`, two column-times-row products and their sum."""
    ctx = TempoContext(_config(backend, vec), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: dict[str, list[np.ndarray]] = {"w1": [], "wv": []}
    with ctx:
        l1 = Linear(K, H, w_init_fun=_const(W1), b_init_fun=_const(B1))
        wv, wp = RT.const(WV, requires_grad=True), RT.const(WP, requires_grad=True)
        h = l1(_source(X, t).reshape((M, 1, K))).tanh()  # (M, 1, H)
        v, p = h @ wv, h @ wp  # (M, 1, 1) each
        ((v * v).sum() + (p.exp()).sum()).backward()
        l1.w.grad.sink_udf(lambda g: got["w1"].append(np.asarray(g).copy()))
        wv.grad.sink_udf(lambda g: got["wv"].append(np.asarray(g).copy()))
    exe = ctx.compile({T: T_})
    exe.execute()
    return {k: got[k][-1] for k in got}, _regions(exe)


@pytest.mark.parametrize("vec", [True, False], ids=["vec", "loop"])
@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_two_heads_gradient_into_the_trunk(backend: str, vec: bool) -> None:
    got, regs = _two_heads(backend, vec)
    w1 = torch.tensor(W1, requires_grad=True)
    wv, wp = (torch.tensor(w, requires_grad=True) for w in (WV, WP))
    h = torch.tanh(torch.from_numpy(X).reshape(T_, M, 1, K) @ w1.T + torch.from_numpy(B1))
    v, p = h @ wv, h @ wp
    ((v * v).sum() + p.exp().sum()).backward()
    np.testing.assert_allclose(got["w1"], w1.grad.numpy(), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(got["wv"], wv.grad.numpy(), rtol=2e-5, atol=2e-5)
    if not vec:  # (per point the products stay (1, 1) @ (1, H) matmuls: nothing to tag)
        return
    tags = {t for r in regs for m in r.body for t in m.tags if t in OUTER_SUM_TAGS}
    assert tags, "the batched trunk's gradient is tagged"
    if backend == "torch":
        kinds = {f.kind for r in regs for f in region_folds.torch_folds(r).values()}
        assert OUTER_SUM in kinds, kinds


def test_the_outer_sum_kernel_against_float64() -> None:
    kernel = region_folds.fold_kernel(OUTER_SUM)
    gen = torch.Generator().manual_seed(4)
    a, b = (torch.randn(16, 8, 1, 1, generator=gen) for _ in range(2))
    for row in ((1, 32), (32,)):
        u, v = (torch.randn(row, generator=gen) for _ in range(2))
        got = kernel(a, b, u, v)
        exact = a.double() * u.double() + b.double() * v.double()
        assert got.shape == (16, 8, 1, 32) and got.dtype == torch.float32
        assert (got.double() - exact).abs().max().item() <= \
            2 * torch.finfo(torch.float32).eps * exact.abs().max().item()
        assert torch.allclose(got, a * u + b * v, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("both", [True, False], ids=["two_outer", "outer_plus_matrix"])
def test_only_sums_of_two_outer_products_are_tagged(both: bool) -> None:
    def fn(g: RT, y: RT, z: RT) -> RT:
        outer = g.sum(1).reshape((M, 1)) * z.mean(0).reshape((1, H))
        return outer + (y.sum(1).reshape((M, 1)) * g.mean(0).reshape((1, H)) if both
                        else g * z)

    got, regs = _near_miss("torch", fn)
    y_np = np.tanh(U)
    outer = G.sum(2, keepdims=True) * Z.mean(1, keepdims=True)
    want = outer + (y_np.sum(2, keepdims=True) * G.mean(1, keepdims=True) if both else G * Z)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-5)
    tagged = any(t in OUTER_SUM_TAGS for r in regs for m in r.body for t in m.tags)
    assert tagged == both
    if both:
        kinds = {f.kind for r in regs for f in region_folds.torch_folds(r).values()}
        assert OUTER_SUM in kinds, kinds
