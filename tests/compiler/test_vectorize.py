"""The vectorisation pass (ARCHITECTURE §5.3) on small programs, on torch, jax and numpy:
results against NumPy references, and the graph checked for what was batched (a dim
left in an op's domain is a loop; batched ops lose it)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from programs import VECTORIZATION, run_once

from tempo.api import RecurrentTensor as RT
from tempo.core.dtype import dtypes
from tempo.core.ops_region import flat_ops
from tempo.core.sdg import SDG, TensorId

B_, T_ = 3, 5
X = np.random.default_rng(0).standard_normal((B_, T_, 4)).astype(np.float32)
W = np.random.default_rng(1).standard_normal((4, 2)).astype(np.float32)
BACKENDS = ("torch", "jax", "numpy")
_UNBATCH = ("index_select", "eval_symbol")  # what reads a batched tensor back at a point


def _cfg(cfg: Any, backend: str, **kw: Any) -> Any:
    return dataclasses.replace(cfg, backend=backend, **{**VECTORIZATION, **kw})


def _looping(sdg: SDG, dim: str) -> list[str]:
    """The compute ops that still loop over `dim` (unbatching reads excluded)."""
    return sorted(op.describe() for op in flat_ops(sdg.ops.values())
                  if dim in [v.name for v in op.domain.variables] and op.name not in _UNBATCH)


def _x(b: Any, t: Any, vectorized: bool) -> RT:
    """The data X[b, t] as a user source; its vectorised form gives all of b at once."""
    def lazy(dim: Any, size: int) -> Callable[[dict], np.ndarray] | None:
        if dim.name != b.name:
            return None  # only batched over b (a source is batched over one dim at most)
        assert size == B_
        return lambda ts: X[:, ts[t]]

    return RT.source_with_ts_udf(lambda ts: X[ts[b], ts[t]], (4,), dtypes.float32,
                                 domain=(b, t), lazy_vectorized_version=lazy if vectorized
                                 else None)


def _np(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


@pytest.mark.parametrize("backend", BACKENDS)
def test_elementwise_matmul_and_reduction_over_both_dims(cfg: Any, backend: str) -> None:
    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, B), (t, T) = bB, tT
        x = _x(b, t, vectorized=True)
        y = ((x * 2.0 + 1.0).tanh() @ RT.const(W)) + RT.const(np.float32(0.5))
        total = y[b, 0:T].sum(0)  # a reduction over t of a batched tensor
        return {"y": y, "total": total, "all": y[0:B, 0:T].sum((0, 1))}

    res, exe = run_once(_cfg(cfg, backend), 2, build, {0: B_, 1: T_})
    want = np.tanh(X * 2 + 1) @ W + 0.5
    np.testing.assert_allclose(_np(res["y"]), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(res["total"]), want.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(res["all"]), want.sum((0, 1)), rtol=1e-5, atol=1e-5)
    assert _looping(exe.sdg, "d0") == []
    assert _looping(exe.sdg, "d1") == ["udf_source"]  # its vectorised form is over b only


@pytest.mark.parametrize("backend", BACKENDS)
def test_udf_without_vectorized_version_keeps_its_loop(cfg: Any, backend: str) -> None:
    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, _) = bB, tT
        x = _x(b, t, vectorized=False)
        return {"y": (x.exp() * 3.0 - x).sum(0)}

    res, exe = run_once(_cfg(cfg, backend), 2, build, {0: B_, 1: T_})
    np.testing.assert_allclose(_np(res["y"]), (np.exp(X) * 3 - X).sum(-1), rtol=1e-5)
    assert _looping(exe.sdg, "d0") == ["udf_source"]  # the source loops, its readers batch
    assert _looping(exe.sdg, "d1") == ["udf_source"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_shifted_read_with_boundary_becomes_pieces(cfg: Any, backend: str) -> None:
    """`v[T-1] = y; v[True] = y[t+1]` (first true wins) over a batched t is exact at the
    boundary; a read of the previous point `y[t-1]` under `t > 0` likewise."""
    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, T) = bB, tT
        y = (_x(b, t, vectorized=True) * 0.5).sum(0)
        v = RT.placeholder((), dtypes.float32, domain=(b, t))
        v[b, T - 1] = y * 0.0 - 1.0
        v[True] = y[b, t + 1]
        p = RT.placeholder((), dtypes.float32, domain=(b, t))
        p[b, 0] = y[b, 3]
        p[True] = y[b, t - 1] + 10.0
        g = RT.placeholder((), dtypes.float32, domain=(b, t))
        g[b, 0] = y * 0.0
        g[True] = _x(b, t, vectorized=False)[b, t - 1].sum(0) * 2.0  # a looping source
        return {"v": v + 0.0, "p": p * 1.0, "g": g + 0.0, "q": y - y[b, T - 1]}

    res, exe = run_once(_cfg(cfg, backend), 2, build, {0: B_, 1: T_})
    y = (X * 0.5).sum(-1)
    want_v = np.concatenate([y[:, 1:], -np.ones((B_, 1), np.float32)], 1)
    want_p = np.concatenate([y[:, 3:4], y[:, :-1] + 10], 1)
    np.testing.assert_allclose(_np(res["v"]), want_v, rtol=1e-6)
    np.testing.assert_allclose(_np(res["p"]), want_p, rtol=1e-6)
    want_g = np.concatenate([np.zeros((B_, 1), np.float32), X[:, :-1].sum(-1) * 2], 1)
    np.testing.assert_allclose(_np(res["g"]), want_g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(res["q"]), y - y[:, -1:], rtol=1e-6)
    assert _looping(exe.sdg, "d1") == ["udf_source"] * 2  # the looping source, over b too
    assert _looping(exe.sdg, "d0") == ["udf_source"]
    off, exe_off = run_once(_cfg(cfg, backend, enable_non_trivial_vectorization=False), 2,
                            build, {0: B_, 1: T_})
    np.testing.assert_allclose(_np(off["v"]), want_v, rtol=1e-6)
    assert _looping(exe_off.sdg, "d1").count("merge") == 3  # boundaries keep their loop


@pytest.mark.parametrize("backend", BACKENDS)
def test_recurrence_keeps_its_loop_and_batches_the_other_dim(cfg: Any, backend: str) -> None:
    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, _) = bB, tT
        x = _x(b, t, vectorized=True)
        s = RT.placeholder((4,), dtypes.float32, domain=(b, t))
        s[b, 0] = x
        s[True] = s[b, t - 1] * 0.5 + x
        return {"s": s.tanh()}

    res, exe = run_once(_cfg(cfg, backend), 2, build, {0: B_, 1: T_})
    s = np.zeros_like(X)
    s[:, 0] = X[:, 0]
    for k in range(1, T_):
        s[:, k] = s[:, k - 1] * 0.5 + X[:, k]
    np.testing.assert_allclose(_np(res["s"]), np.tanh(s), rtol=1e-5, atol=1e-6)
    assert "merge" in _looping(exe.sdg, "d1")  # t carried by the recurrence
    assert _looping(exe.sdg, "d0") == []  # b carried by nothing


@pytest.mark.parametrize("backend", BACKENDS)
def test_symbol_values_and_random_draws(cfg: Any, backend: str) -> None:
    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, _) = bB, tT
        bt = RT.from_symbol(b).cast(dtypes.float32) * 10.0 + RT.from_symbol(t).cast(
            dtypes.float32)
        r = RT.random((64,), dtypes.float32, domain=(b, t))
        return {"bt": bt * 1.0, "r": r * 1.0}

    res, exe = run_once(_cfg(cfg, backend), 2, build, {0: B_, 1: T_})
    want = np.arange(B_)[:, None] * 10.0 + np.arange(T_)[None, :]
    np.testing.assert_array_equal(_np(res["bt"]), want.astype(np.float32))
    r = _np(res["r"])
    assert r.shape == (B_, T_, 64) and (r >= 0).all() and (r < 1).all()
    flat = r.reshape(B_ * T_, 64)
    assert len({row.tobytes() for row in flat}) == B_ * T_  # a fresh draw at every point
    assert abs(float(r.mean()) - 0.5) < 0.05
    assert _looping(exe.sdg, "d0") == [] and _looping(exe.sdg, "d1") == []


def test_flags_and_group_threshold(cfg: Any) -> None:
    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, _) = bB, tT
        return {"y": (_x(b, t, vectorized=True) + 1.0).exp()}

    want = np.exp(X + 1)
    for kw, loops in (({"enable_vectorization": False}, True),
                      ({"reject_vec_groups_smaller_than": 4}, True),
                      ({"reject_vec_groups_with_external_deps_ratio_greater_than": 0.0}, False),
                      ({}, False)):
        res, exe = run_once(_cfg(cfg, "torch", **kw), 2, build, {0: B_, 1: T_})
        np.testing.assert_allclose(_np(res["y"]), want, rtol=1e-6)
        assert bool(_looping(exe.sdg, "d0")) == loops, kw


def test_gathers_over_the_ratio_keep_the_loop(cfg: Any) -> None:
    """A group that mostly reads tensors that keep their loop (each a gather of all D
    points) is rejected when the ratio is exceeded."""
    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, _) = bB, tT
        x = _x(b, t, vectorized=False)
        return {"y": (x + x * 2.0).exp()}

    strict = {"reject_vec_groups_with_external_deps_ratio_greater_than": 0.2}
    for kw, loops in (({}, ["udf_source"]), (strict, ["add", "exp", "mul", "udf_source"])):
        res, exe = run_once(_cfg(cfg, "torch", **kw), 2, build, {0: B_, 1: T_})
        np.testing.assert_allclose(_np(res["y"]), np.exp(3 * X), rtol=1e-5)
        assert _looping(exe.sdg, "d0") == loops, kw


@pytest.mark.parametrize("backend", BACKENDS)
def test_batched_products_summed_become_matmuls(cfg: Any, backend: str) -> None:
    """A Linear layer on a vector per point (`(w * x.unsqueeze(0)).sum(1)`) and a weight
    gradient summed over the points (outer products) run as matmuls once batched."""
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((B_, 48)).astype(np.float32)
    gs = rng.standard_normal((B_, 64)).astype(np.float32)
    w = rng.standard_normal((64, 48)).astype(np.float32)

    def build(bB):  # noqa: ANN001, ANN202
        b, B = bB
        x = RT.source_with_ts_udf(lambda ts: xs[ts[b]], (48,), dtypes.float32, domain=(b,),
                                  lazy_vectorized_version=lambda d, n: lambda ts: xs)
        g = RT.source_with_ts_udf(lambda ts: gs[ts[b]], (64,), dtypes.float32, domain=(b,),
                                  lazy_vectorized_version=lambda d, n: lambda ts: gs)
        y = (RT.const(w) * x.unsqueeze(0)).sum(1)
        outer = g.unsqueeze(1) * x.unsqueeze(0)
        return {"y": y.tanh(), "gw": outer[0:B].sum(0)}

    # dead-code elimination on: the products are then read by their sums only
    res, exe = run_once(_cfg(cfg, backend, enable_dead_code_elim=True), 1, build, {0: B_})
    np.testing.assert_allclose(_np(res["y"]), np.tanh(xs @ w.T), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(res["gw"]), gs.T @ xs, rtol=1e-4, atol=1e-4)
    names = [op.name for op in flat_ops(exe.sdg.ops.values())]
    assert names.count("matmul") == 2 and "binary" not in names  # no mul left


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sum_along_a_dim_one_factor_broadcasts_sums_the_other_first(cfg: Any,
                                                                     backend: str) -> None:
    """A Linear layer on an expanded scalar per point (`(w * s).sum(1)`, s broadcast along
    the summed dim) is `s * w.sum(1)`: batched over the points the (B, 64, 48) product is
    never built and the weight's sum is taken once, not per point; the next layer's
    contraction runs as a matmul with no transposing copy of the batched activations."""
    rng = np.random.default_rng(4)
    ss = rng.standard_normal((B_,)).astype(np.float32)
    w1 = rng.standard_normal((64, 48)).astype(np.float32)
    w2 = rng.standard_normal((32, 64)).astype(np.float32)

    def build(bB):  # noqa: ANN001, ANN202
        b, B = bB
        s = RT.source_with_ts_udf(lambda ts: ss[ts[b]], (), dtypes.float32, domain=(b,),
                                  lazy_vectorized_version=lambda d, n: lambda ts: ss)
        h = (RT.const(w1) * s.reshape((1, 1))).sum(1).tanh()
        return {"y": (RT.const(w2) * h.unsqueeze(0)).sum(1)}

    res, exe = run_once(_cfg(cfg, backend, enable_dead_code_elim=True), 1, build, {0: B_})
    h = np.tanh(ss[:, None] * w1.sum(1)[None, :])
    np.testing.assert_allclose(_np(res["y"]), h @ w2.T, rtol=1e-4, atol=1e-4)
    flat = list(flat_ops(exe.sdg.ops.values()))
    sizes = [exe.sdg.tensors[t].shape for t in exe.sdg.tensors if t.op_id in exe.sdg.ops]
    assert all(math.prod(sh.as_static()) < B_ * 48 * 64 for sh in sizes if sh.is_static())
    assert [op.name for op in flat].count("matmul") == 1
    moved = [exe.sdg.tensors[TensorId(op.op_id, 0)].shape for op in flat if op.name == "permute"]
    assert all(B_ not in tuple(sh.as_static()) for sh in moved), moved  # the weight's only
    w_sum = [op for op in flat if op.name == "sum" and "d0" not in
             [v.name for v in op.domain.variables]]
    assert w_sum, "the weight's sum runs once, outside the batched points"


@pytest.mark.parametrize("backend", ("torch", "numpy"))
@pytest.mark.parametrize("cols", (5, 130))
def test_part_of_large_looping_points_is_taken_in_the_loop(cfg: Any, backend: str,
                                                           cols: int) -> None:
    """A reader keeping one column of each point of a recurrence (an env step's reward
    in its packed output) is batched by gathering the recurrence's points when they are
    small; when they are large (128 x 130 floats, 65 KiB) it keeps the loop and only the
    columns are gathered — the same values either way."""
    T = 6

    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        s = RT.placeholder((128, cols), dtypes.float32, domain=(t,))
        s[0] = RT.const(np.ones((128, cols), np.float32))
        s[True] = s[t - 1] * 0.5 + RT.from_symbol(t).cast(dtypes.float32)
        r = s.index(1, 0) * 2.0
        return {"r": r, "total": r[0:T].sum(0)}

    res, exe = run_once(_cfg(cfg, backend), 1, build, {0: T})
    s = np.ones(128, np.float32)
    rows = [s.copy()]
    for k in range(1, T):
        s = s * 0.5 + k
        rows.append(s.copy())
    want = 2 * np.stack(rows)
    np.testing.assert_allclose(_np(res["r"]), want, rtol=1e-6)
    np.testing.assert_allclose(_np(res["total"]), want.sum(0), rtol=1e-6)
    looping = _looping(exe.sdg, "d0")
    taken = [x for x in looping if x.startswith(("slice", "index"))]
    assert bool(taken) == (cols == 130), looping


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_contraction_over_a_bound_sized_window_is_a_matmul(cfg: Any, backend: str) -> None:
    """A discounted sum over the window `x[b, 0:T]` (GAE's closed form: a (T, T) weight
    matrix times the window, recorded as a broadcast product and a sum) batched over b:
    the window is T long, a bound whose value this compile knows, so the product's shape
    is static for the contraction, which makes it a matmul — no (B, T, T) product (E5's
    learner built and summed a strided 64x64x64 one per iteration)."""
    n_b, n_t = 4, 32  # a product of 4096 elements: large enough to contract
    xs = np.random.default_rng(5).standard_normal((n_b, n_t)).astype(np.float32)

    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, T) = bB, tT
        x = RT.source_with_ts_udf(lambda ts: xs[ts[b], ts[t]], (), dtypes.float32,
                                  domain=(b, t), lazy_vectorized_version=lambda d, n: (
                                      (lambda ts: xs[:, ts[t]]) if d.name == b.name
                                      else None))
        return {"y": x[b, 0:T].discounted_cum_sum(0.9, 0, keep_symbolic_dim=False)}

    res, exe = run_once(_cfg(cfg, backend, enable_dead_code_elim=True), 2, build,
                        {0: n_b, 1: n_t})
    k = np.arange(n_t)
    weights = np.where(k[None, :] >= k[:, None], 0.9 ** (k[None, :] - k[:, None]), 0.0)
    np.testing.assert_allclose(_np(res["y"]), xs @ weights.T.astype(np.float32),
                               rtol=1e-5, atol=1e-5)
    flat = list(flat_ops(exe.sdg.ops.values()))
    assert "matmul" in [op.name for op in flat]
    bounds = exe.sdg.bound_defs
    sizes = [math.prod(exe.sdg.tensors[t].shape.try_resolve(bounds).as_static())
             for t in exe.sdg.tensors if t.op_id in exe.sdg.ops
             and exe.sdg.tensors[t].shape.try_resolve(bounds).is_static()]
    assert max(sizes) < n_b * n_t * n_t, sizes
