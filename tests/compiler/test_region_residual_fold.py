"""torch regions run `x @ w + r` with `r` a matrix of the product's shape (a residual, as
in the GPT-2 core's `x + a @ W_O`) as one `addmm` (the grouping pass tags the add:
`grouping_folds.linear_tag`): values and the weight's gradient against torch eager, with
vectorisation off (x a matrix: folded) and on (x a batch of matrices: not folded)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from programs import all_passes

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.ops_region import LINEAR_ROWS, RegionOp
from tempo.runtime import region_folds

T_, M, K, N = 4, 5, 6, 3
RNG = np.random.default_rng(11)
X = RNG.standard_normal((T_, M, K)).astype(np.float32)
R = RNG.standard_normal((T_, M, N)).astype(np.float32)
W = RNG.standard_normal((K, N)).astype(np.float32)


def _tempo(vec: bool) -> tuple[np.ndarray, np.ndarray, list[RegionOp]]:
    cfg = dataclasses.replace(all_passes(ExecutionConfig.test_cfg()), backend="torch",
                              enable_vectorization=vec)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    ys: list[np.ndarray] = []
    gw: list[np.ndarray] = []
    with ctx:
        w = RT.const(W, requires_grad=True)
        x = RT.source_with_ts_udf(lambda ts: X[ts[t]], (M, K), dtypes.float32, domain=(t,),
                                  lazy_vectorized_version=lambda d, n: lambda ts: X)
        r = RT.source_with_ts_udf(lambda ts: R[ts[t]], (M, N), dtypes.float32, domain=(t,),
                                  lazy_vectorized_version=lambda d, n: lambda ts: R)
        y = ((x @ w) + r).relu() * 2.0
        y.sink_udf(lambda v: ys.append(np.asarray(v).copy()))
        (y * y).sum().backward()
        w.grad.sink_udf(lambda v: gw.append(np.asarray(v).copy()))
    exe = ctx.compile({T: T_})
    exe.execute()
    y_all = np.concatenate([np.asarray(v).reshape(-1, M, N) for v in ys])
    return y_all, gw[-1], [op for op in exe.sdg.ops.values() if isinstance(op, RegionOp)]


@pytest.mark.parametrize("vec", [False, True])
def test_residual_add_of_a_matmul(vec: bool) -> None:
    got, gw, regs = _tempo(vec)
    x, r = torch.from_numpy(X), torch.from_numpy(R)
    w = torch.from_numpy(W).requires_grad_()
    y = torch.relu(x @ w + r) * 2.0
    (y * y).sum().backward()
    np.testing.assert_allclose(got, y.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gw, w.grad.numpy(), rtol=1e-4, atol=1e-4)
    kinds = {f.kind for op in regs for f in region_folds.torch_folds(op).values()}
    if not vec:  # x a matrix per t: the forward's x @ w + r is one addmm
        assert LINEAR_ROWS in kinds


def test_residual_fold_kernel_is_addmm() -> None:
    """BLAS adds the addend inside the product's sum (beta = 1), so the bits may differ
    from `x @ w + r` in the last place (they do at these shapes): close, not equal."""
    kernel = region_folds.fold_kernel(LINEAR_ROWS)
    x, r = torch.from_numpy(X[0]), torch.from_numpy(R[0])
    w = torch.from_numpy(W)
    want = (x.double() @ w.double() + r.double()).numpy()
    for _ in range(3):  # (the weight's prepared copy is made at the second call)
        got = kernel(x, w, r)
        assert torch.equal(got, torch.addmm(r, x, w))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


