"""bfloat16 tensors through the compiler on every backend against torch eager in bfloat16
(`dtypes.bfloat16` did not exist: AttributeError). torch computes bfloat16 ops in float32
and rounds once (sums and products accumulate in float32); ours do the same on torch (the
same kernels), jax (XLA) and numpy (ml_dtypes' ufuncs; matmul and sums explicitly in
float32, `runtime.backends.numpy.in_float32`, `prims.reduce.ACC`), so results agree to a
bfloat16 rounding: torch's own bfloat16 tolerances (rtol 1.6e-2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tests.api.ops.op_harness import make_input, run_static

BACKENDS = ["torch", "jax", "numpy"]
BF = torch.bfloat16
A, C = make_input((6, 16), BF, seed=1), make_input((6, 16), BF, seed=2)
B = make_input((16, 5), BF, seed=3)
POS = make_input((6, 16), BF, seed=4, positive=True)
BA, BB = make_input((3, 4, 8), BF, seed=5), make_input((3, 8, 2), BF, seed=6)
LONG = make_input((4, 2048), BF, seed=7)  # long sums: bfloat16 accumulation would drift
LONG_B = make_input((2048, 3), BF, seed=9)

Fn = Callable[..., Any]
CASES: dict[str, tuple[Fn, tuple[torch.Tensor, ...]]] = {
    "add": (lambda a, c: a + c, (A, C)),
    "sub": (lambda a, c: a - c, (A, C)),
    "mul": (lambda a, c: a * c, (A, C)),
    "div": (lambda a, p: a / p, (A, POS)),
    "neg_abs": (lambda a: (-a).abs(), (A,)),
    "exp": (lambda a: a.exp(), (A,)),
    "log": (lambda p: p.log(), (POS,)),
    "sqrt": (lambda p: p.sqrt(), (POS,)),
    "tanh": (lambda a: a.tanh(), (A,)),
    "sigmoid": (lambda a: a.sigmoid(), (A,)),
    "pow": (lambda p, a: p ** a, (POS, A)),
    "maximum": (lambda a, c: a.maximum(c), (A, C)),
    "where": (lambda a, c: (a > c).where(a, c), (A, C)),
    "matmul": (lambda a, b: a @ b, (A, B)),
    "bmm": (lambda a, b: a @ b, (BA, BB)),
    "matmul_long": (lambda a, b: a @ b, (LONG, LONG_B)),
    "sum": (lambda a: a.sum(1), (A,)),
    "sum_long": (lambda x: x.sum(1), (LONG,)),
    "mean": (lambda a: a.mean(0), (A,)),
    "max": (lambda a: a.max(1)[0], (A,)),
    "argmax": (lambda a: a.argmax(1), (A,)),
    "softmax": (lambda a: a.softmax(-1), (A,)),
    "log_softmax": (lambda a: a.log_softmax(-1), (A,)),
    "cumsum": (lambda a: a.cumsum(1), (A,)),
    "sort": (lambda a: a.sort(1)[0], (A,)),
}
TORCH_REF: dict[str, Fn] = {"maximum": torch.maximum,
                            "where": lambda a, c: torch.where(a > c, a, c)}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(CASES))
def test_bfloat16_op_equals_torch_eager(name: str, backend: str) -> None:
    fn, args = CASES[name]
    got = run_static(fn, *args, backend=backend)
    want = TORCH_REF.get(name, fn)(*args)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype == BF:
        torch.testing.assert_close(got, want)  # bfloat16's own tolerances
    else:
        assert torch.equal(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bfloat16_mixed_dtypes_promote_as_jax_and_torch(backend: str) -> None:
    """bf16 + f16 -> float32 and bf16 + int32 -> bfloat16 (torch's and JAX's joins), casts
    both ways; a Python float is float32 (API §5: as a float16 tensor times 0.5 is)."""
    i32 = torch.arange(16, dtype=torch.int32) - 8
    half = C.half()
    got = run_static(lambda a, h, i: (a + h, a + i, a.cast(dtypes.float32) * 3.0,
                                      (a * 4).cast(dtypes.int32), a * 0.5),
                     A, half, i32, backend=backend)
    want = (A + half, A + i32, A.float() * 3.0, (A * 4).int(), A.float() * 0.5)
    assert [g.dtype for g in got] == [torch.float32, BF, torch.float32, torch.int32,
                                      torch.float32]
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_bfloat16_recurrence_block_store_and_sink(backend: str) -> None:
    """A bfloat16 recurrence over t read back as a window (block stores, stacking, the
    sink and get_spatial_tensor all in bfloat16): o[t] = o[t-1] * 0.5 + x in bfloat16."""
    cfg = ExecutionConfig.test_cfg()
    cfg.backend = backend
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    x = make_input((4,), BF, seed=8)
    half = torch.tensor(0.5, dtype=BF)
    seen: list[np.ndarray] = []
    with ctx:
        o = RT.placeholder((4,), dtypes.bfloat16, domain=(t,))
        xc = RT.const(x)
        o[0] = xc
        o[True] = o[t - 1] * RT.const(half) + xc
        o[0:T].sink_udf(lambda v: seen.append(np.asarray(v.float() if hasattr(v, "float")
                                                         else np.asarray(v, np.float32))))
    exe = ctx.compile({T: 6})
    exe.execute()
    got = exe.get_spatial_tensor_torch(o.tensor_id, (slice(0, 6),))
    ref, cur = [], x
    for k in range(6):
        cur = x if k == 0 else cur * half + x
        ref.append(cur)
    want = torch.stack(ref)
    assert got.dtype == BF
    torch.testing.assert_close(got, want, atol=0, rtol=0)
    np.testing.assert_array_equal(seen[-1], want.float().numpy())


def test_bfloat16_const_from_numpy_and_udf_results() -> None:
    """ml_dtypes bfloat16 arrays in (const) and out of a map UDF on torch: neither DLPack
    nor torch.as_tensor takes numpy's bfloat16, so its bits cross as int16."""
    arr = np.array([[1.5, -2.25], [3.0, 0.0078125]], dtype=ml_dtypes.bfloat16)

    def udf(v: Any) -> np.ndarray:
        assert v.dtype == BF
        return (v.float().numpy() * 2).astype(ml_dtypes.bfloat16)

    got = run_static(lambda: RT.const(arr).map_udf(udf, (2, 2), dtypes.bfloat16))
    assert got.dtype == BF
    want = torch.tensor([[3.0, -4.5], [6.0, 0.015625]], dtype=BF)
    assert torch.equal(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_half_precision_random_stays_in_unit_interval(dt: str, backend: str) -> None:
    """U[0, 1) in bfloat16/float16: numpy draws float32 and rounded it, so draws in
    [1 - epsneg/2, 1) became 1.0 (one in 512 in bfloat16, one in 4096 in float16; ~39 and
    ~5 of these 20000). torch and jax draw on the dtype's grid."""
    got = run_static(lambda: RT.random((20000,), getattr(dtypes, dt)), backend=backend)
    assert got.dtype == getattr(torch, dt)
    assert 0.0 <= got.min().item() and got.max().item() < 1.0
    assert abs(got.float().mean().item() - 0.5) < 0.02
