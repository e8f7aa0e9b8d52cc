"""torch regions run `matmul(x, w) + b` with a bias row as one `addmm` call (x a matrix)
or as the matmul with the bias added in place (x a batch of rows; cheaper than F.linear)
(the grouping pass tags the add from static shapes, `grouping_folds`; the runtime folds
it, `region_folds`): Linear layers' values and gradients against torch eager on torch,
jax and numpy, with vectorisation (x a batch of rows) and without (x a matrix); the
kernel against `matmul + add` bit for bit, with its weight copy reused only while the
weight is the same unchanged tensor. On a CPU device tanh is torch's own or API.md's
2*sigmoid(2x) - 1, whichever the machine runs faster (`tempo.runtime.torch_tanh`), and a
tanh of a linear fold is folded with it: both forms within 2e-7 of float64 tanh, each
fold bit for bit its unfolded calls."""

from __future__ import annotations

import dataclasses
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
from tempo.core.ops_region import LINEAR_BATCH, LINEAR_ROWS, RegionOp
from tempo.prims.elementwise import torch_tanh_cpu
from tempo.runtime import region_folds, torch_tanh

T_, M, K, H, N = 4, 5, 6, 8, 3
RNG = np.random.default_rng(7)
X = RNG.standard_normal((T_, M, K)).astype(np.float32)
W1, B1 = RNG.standard_normal((H, K)).astype(np.float32), RNG.standard_normal(H).astype(
    np.float32)
W2, B2 = RNG.standard_normal((N, H)).astype(np.float32), RNG.standard_normal(N).astype(
    np.float32)


def _const(v: np.ndarray) -> Any:
    return lambda shape, dtype, domain: RT.const(v)


def _tempo(backend: str, vec: bool) -> tuple[dict[str, np.ndarray], list[RegionOp]]:
    cfg = all_passes(ExecutionConfig.test_cfg())
    cfg = dataclasses.replace(cfg, backend=backend, enable_vectorization=vec)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: dict[str, list[np.ndarray]] = {"y": [], "w1": [], "b1": [], "w2": []}

    def keep(name: str) -> Any:
        return lambda v: got[name].append(np.asarray(v).copy())

    with ctx:
        l1 = Linear(K, H, w_init_fun=_const(W1), b_init_fun=_const(B1))
        l2 = Linear(H, N, w_init_fun=_const(W2), b_init_fun=_const(B2))
        x = RT.source_with_ts_udf(lambda ts: X[ts[t]], (M, K), dtypes.float32, domain=(t,),
                                  lazy_vectorized_version=lambda d, n: lambda ts: X)
        y = l2(l1(x).tanh())
        y.sink_udf(keep("y"))
        ((y * y).sum() * (RT.from_symbol(t).cast(dtypes.float32) + 1.0)).backward()
        for name, p in (("w1", l1.w), ("b1", l1.b), ("w2", l2.w)):
            p.grad.sink_udf(keep(name))
    exe = ctx.compile({T: T_})
    exe.execute()
    out = {"y": np.stack(got["y"])}
    out.update({k: got[k][-1] for k in ("w1", "b1", "w2")})
    return out, [op for op in exe.sdg.ops.values() if isinstance(op, RegionOp)]


def _reference() -> dict[str, np.ndarray]:
    w1, b1, w2 = (torch.tensor(v, requires_grad=True) for v in (W1, B1, W2))
    y = torch.nn.functional.linear(torch.tanh(torch.from_numpy(X) @ w1.T + b1), w2,
                                   torch.from_numpy(B2))
    weight = torch.arange(1, T_ + 1, dtype=torch.float32).reshape(T_, 1, 1)
    ((y * y) * weight).sum().backward()
    return {"y": y.detach().numpy(), "w1": w1.grad.numpy(), "b1": b1.grad.numpy(),
            "w2": w2.grad.numpy()}


@pytest.mark.parametrize("vec", [True, False], ids=["vec", "loop"])
@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_linear_layers_fold_with_the_same_values_and_gradients(backend: str,
                                                               vec: bool) -> None:
    got, regions = _tempo(backend, vec)
    want = _reference()
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=2e-5, err_msg=k)
    tags = {t for r in regions for m in r.body for t in m.tags}
    assert (LINEAR_BATCH if vec else LINEAR_ROWS) in tags, tags
    if backend == "torch":
        kinds = {f.kind for r in regions for f in region_folds.torch_folds(r).values()}
        linear = LINEAR_BATCH if vec else LINEAR_ROWS
        assert kinds >= {linear, linear + region_folds.TANH}, kinds  # l2's, l1's + tanh


def _want(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(x, w) + b


@pytest.mark.parametrize("rows", [True, False], ids=["addmm", "linear"])
def test_the_kernel_equals_matmul_plus_add_bit_for_bit(rows: bool) -> None:
    g = torch.Generator().manual_seed(0)
    param = torch.randn(16, 12, generator=g)
    w, b = param.mT, torch.randn(16, generator=g)  # (12, 16): a weight's transposed view
    kernel = region_folds.fold_kernel(LINEAR_ROWS if rows else LINEAR_BATCH)
    xs = [torch.randn(9, 12, generator=g)] if rows else [
        torch.randn(4, 9, 12, generator=g),
        torch.randn(9, 12, generator=g).unsqueeze(0).expand(4, 9, 12)]  # strided batch
    for x in xs:
        for _ in range(3):  # the weight's first call, its copy's making and reuse
            assert torch.equal(kernel(x, w, b), _want(x, w, b))
        with torch.no_grad():
            param.mul_(-0.5)  # in place: the copy of the old values must not be used
        assert torch.equal(kernel(x, w, b), _want(x, w, b))
        other = torch.randn(12, 16, generator=g)
        assert torch.equal(kernel(x, other, b), _want(x, other, b))


@pytest.mark.parametrize("tanh", [False, True], ids=["linear", "linear+tanh"])
def test_a_batch_fold_adds_the_bias_in_place_over_its_matmul(tanh: bool) -> None:
    """A contiguous batch of rows: torch's matmul (one mm over the folded rows), then the
    bias (and tanh) in place over its fresh result, no addmm or F.linear (whose C++
    flattens, transposes and views around its addmm: slower per call); a strided batch
    takes one addmm over its rows. Values as `matmul + add` (then torch.tanh) bit for bit."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Calls(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            self.names.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    g = torch.Generator().manual_seed(3)
    w, b = torch.randn(16, 12, generator=g).mT, torch.randn(16, generator=g)
    kernel = (region_folds.linear_tanh_kernel(False, False, torch_tanh.NATIVE) if tanh
              else region_folds.fold_kernel(LINEAR_BATCH))
    want = (lambda x: torch.tanh(_want(x, w, b))) if tanh else (lambda x: _want(x, w, b))
    x = torch.randn(4, 9, 12, generator=g)
    for _ in range(3):  # the weight's first call, its copy's making and reuse
        with Calls() as mode:
            got = kernel(x, w, b)
        assert torch.equal(got, want(x)) and got.shape == (4, 9, 16)
    assert "addmm" not in mode.names and "linear" not in mode.names, mode.names
    assert mode.names.count("add_") == 1 and mode.names.count("mm") == 1, mode.names
    assert mode.names.count("tanh_") == int(tanh), mode.names
    strided = torch.randn(9, 12, generator=g).unsqueeze(0).expand(4, 9, 12)
    with Calls() as mode:
        got = kernel(strided, w, b)
    assert torch.equal(got, want(strided)) and mode.names.count("addmm") == 1, mode.names


@pytest.mark.parametrize("rows", [True, False], ids=["addmm", "linear"])
def test_the_kernel_runs_under_inference_mode(rows: bool) -> None:
    """Inference tensors track no version: their weight is used as it is, never kept."""
    kernel = region_folds.fold_kernel(LINEAR_ROWS if rows else LINEAR_BATCH)
    with torch.inference_mode():
        w, b = torch.randn(6, 12).mT, torch.randn(6)
        x = torch.randn(9, 12) if rows else torch.randn(4, 9, 12)
        for _ in range(3):
            assert torch.equal(kernel(x, w, b), _want(x, w, b))
        w.mul_(2.0)
        assert torch.equal(kernel(x, w, b), _want(x, w, b))


def test_a_weight_is_copied_at_its_second_call_and_only_while_unchanged() -> None:
    copies: list[int] = []
    memo = region_folds.Prepared(lambda wc: copies.append(1) or wc)
    param = torch.randn(8, 6)
    w = param.mT
    assert memo(w) is w and memo.wp is None  # first sighting: used as it is
    wc = memo(w)  # second: copied once
    assert wc.is_contiguous() and torch.equal(wc, w) and memo.wp is wc
    param.add_(1.0)
    assert memo(w) is w and memo.wp is None  # changed in place: forgotten
    big = torch.randn(region_folds.CONTIGUOUS_ONCE_BYTES // 4 + 8, 2).mT
    memo(big)
    assert memo(big) is big  # too large to copy: kept as it is


@pytest.mark.parametrize("form", torch_tanh.FORMS)
def test_cpu_tanh_is_within_2e_7_of_float64_tanh(form: str) -> None:
    tanh = torch_tanh_cpu(form)
    x = torch.cat([torch.linspace(-12.0, 12.0, 200_001), torch.tensor([0.0, 30.0, -30.0])])
    got, want = tanh(x), torch.tanh(x.double())
    assert got.dtype == torch.float32 and got.shape == x.shape
    assert (got.double() - want).abs().max().item() <= 2e-7
    assert got[-3:].tolist() == [0.0, 1.0, -1.0]
    x64 = torch.linspace(-5.0, 5.0, 1001, dtype=torch.float64)
    assert (tanh(x64) - torch.tanh(x64)).abs().max().item() <= 1e-15
    assert tanh(torch.tensor(0.5, dtype=torch.float16)).dtype == torch.float16
    assert tanh(torch.tensor(0.5)).shape == ()


@pytest.mark.parametrize("form", torch_tanh.FORMS)
@pytest.mark.parametrize("rows", [True, False], ids=["addmm", "linear"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_the_tanh_fold_equals_its_unfolded_calls_bit_for_bit(rows: bool, compiled: bool,
                                                             form: str) -> None:
    g = torch.Generator().manual_seed(1)
    tanh = torch_tanh_cpu(form)
    w, b = torch.randn(16, 12, generator=g).mT, torch.randn(16, generator=g)
    kernel = region_folds.linear_tanh_kernel(rows, compiled, form)
    xs = [torch.randn(9, 12, generator=g)] if rows else [
        torch.randn(4, 9, 12, generator=g),
        torch.randn(9, 12, generator=g).unsqueeze(0).expand(4, 9, 12)]
    for x in xs:
        for _ in range(3):  # the weight's first call, its copy's making and reuse
            got = kernel(x, w, b)
            assert torch.equal(got, tanh(_want(x, w, b)))
            assert (got - torch.tanh(_want(x, w, b))).abs().max().item() <= 2e-7


@pytest.mark.parametrize("form", torch_tanh.FORMS)
@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_cpu_tanh_in_half_types_equals_torch_tanh(form: str, dt: torch.dtype) -> None:
    """The sigmoid form in float16/bfloat16 cancelled near 0: 2*sigmoid(2x) - 1 with
    sigmoid rounded to half an ulp of 0.5 gave tanh(0.002) = 0 and errors of 2^-9 in
    bfloat16 (found by tests/api/ops/test_bfloat16_ops.py on a machine that picks the
    sigmoid form). Half types now take torch.tanh in both forms: equal to it bit for bit,
    also through the fold."""
    tanh = torch_tanh_cpu(form)
    x = torch.cat([torch.linspace(-4.0, 4.0, 4001), torch.tensor([0.002, -0.001])]).to(dt)
    assert torch.equal(tanh(x.clone()), torch.tanh(x))
    g = torch.Generator().manual_seed(2)
    w, b = torch.randn(6, 5, generator=g).to(dt).mT, torch.randn(6, generator=g).to(dt)
    xs = torch.randn(7, 5, generator=g).to(dt)
    got = region_folds.linear_tanh_kernel(True, False, form)(xs, w, b)
    assert torch.equal(got, torch.tanh(torch.addmm(b, xs, w)))
