"""Runs small tempo programs through the real compiler and returns torch tensors, so op
tests can compare against torch eager."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from tempo.api.recurrent_tensor import RecurrentTensor
from tempo.api.tempo_context_manager import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

TORCH_TO_TEMPO = {
    torch.bool: dtypes.bool_, torch.int8: dtypes.int8, torch.int32: dtypes.int32,
    torch.int64: dtypes.int64, torch.float16: dtypes.float16, torch.float32: dtypes.float32,
    torch.bfloat16: dtypes.bfloat16,
    torch.float64: dtypes.float64, torch.uint8: dtypes.uint8, torch.int16: dtypes.int16,
}


def to_rt(x: Any) -> Any:
    """torch tensors become consts of the same dtype; anything else is passed through."""
    if isinstance(x, torch.Tensor):
        return RecurrentTensor.const(x, dtype=TORCH_TO_TEMPO[x.dtype])  # (bfloat16 too)
    if isinstance(x, list | tuple) and x and all(isinstance(v, torch.Tensor) for v in x):
        return type(x)(to_rt(v) for v in x)
    return x


def run_static(fn: Callable[..., Any], *args: Any, seed: int = 0, backend: str = "torch",
               **kwargs: Any) -> Any:
    """Record `fn(*consts)` in a static (num_dims=0) program, compile, execute on `backend`
    and read back every RecurrentTensor of the result (a tensor, or a nested tuple/list)."""
    cfg = ExecutionConfig.test_cfg()
    cfg.seed = seed
    cfg.backend = backend
    ctx = TempoContext(cfg, num_dims=0)
    with ctx:
        out = fn(*[to_rt(a) for a in args], **kwargs)
    exe = ctx.compile({})
    exe.execute()
    return _read(exe, out)


def _read(exe: Any, out: Any) -> Any:
    if isinstance(out, RecurrentTensor):
        return exe.get_spatial_tensor_torch(out.tensor_id)
    if isinstance(out, list | tuple):
        return type(out)(_read(exe, o) for o in out)
    return out


def run_temporal(fn: Callable[..., Any], bound: int, seed: int = 0) -> list[Any]:
    """Record `fn(t)` in a 1-d program; return the values its result sinks at each t."""
    cfg = ExecutionConfig.test_cfg()
    cfg.seed = seed
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    got: list[Any] = []
    with ctx:
        out = fn(t)
        out.sink_udf(lambda v: got.append(v.clone()))
    exe = ctx.compile({T: bound})
    exe.execute()
    return got


def assert_same(got: Any, want: Any, rtol: float = 1e-5, atol: float = 1e-6,
                check_dtype: bool = True) -> None:
    """Values (NaN == NaN, inf == inf) and dtypes equal; ints/bools bit-for-bit."""
    if isinstance(want, list | tuple):
        assert isinstance(got, list | tuple) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol, check_dtype)
        return
    assert isinstance(got, torch.Tensor), type(got)
    assert tuple(got.shape) == tuple(want.shape), f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    if check_dtype:
        assert got.dtype == want.dtype, f"dtype {got.dtype} != {want.dtype}"
    if want.dtype.is_floating_point or got.dtype.is_floating_point:
        torch.testing.assert_close(got.double(), want.double(), rtol=rtol, atol=atol,
                                   equal_nan=True, check_dtype=False)
    else:
        assert torch.equal(got.to(want.dtype), want), f"{got} != {want}"


def make_input(shape: Sequence[int], dtype: torch.dtype, seed: int = 0,
               special: bool = False, positive: bool = False) -> torch.Tensor:
    """Deterministic test data; `special` plants NaN/inf/-inf in float tensors."""
    g = torch.Generator().manual_seed(seed + 7 * len(shape) + int(np.prod(shape, dtype=int)))
    if dtype == torch.bool:
        return torch.rand(tuple(shape), generator=g) < 0.5
    if not dtype.is_floating_point:
        lo = 1 if positive else -5
        return torch.randint(lo, 6, tuple(shape), generator=g, dtype=dtype)
    x = torch.randn(tuple(shape), generator=g, dtype=torch.float64) * 2
    if positive:
        x = x.abs() + 0.1
    x = x.to(dtype)
    if special and x.numel() >= 3:
        flat = x.view(-1)
        flat[0], flat[1], flat[2] = float("nan"), float("inf"), float("-inf")
    return x
