"""Shared helpers for the nn tests: build a program, compile it with the test config, read
tensors back, and compare with torch (values and gradients)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig


class Run:
    """A compiled program; `get(x, *index)` reads tensor `x` at the index of its domain."""

    def __init__(self, exe: Any) -> None:
        self.exe = exe

    def get(self, x: Any, *index: Any) -> torch.Tensor:
        return self.exe.get_spatial_tensor_torch(x.tensor_id, tuple(index))


def build_and_run(
    num_dims: int, body: Callable[..., Any], bounds: Callable[..., dict] | None = None
) -> tuple[Run, Any]:
    """`body(*symbols)` records the program inside a fresh context; returns (run, result)."""
    ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=num_dims)
    syms = [s for pair in ctx.variables_and_bounds for s in pair]
    with ctx:
        out = body(*syms)
    exe = ctx.compile(bounds(*syms) if bounds else {})
    exe.execute()
    return Run(exe), out


def const(t: torch.Tensor | np.ndarray) -> RT:
    arr = t.detach().numpy() if isinstance(t, torch.Tensor) else t
    return RT.const(np.ascontiguousarray(arr))


def leaf(t: torch.Tensor) -> RT:
    """A differentiable constant (a leaf that receives `.grad`)."""
    x = const(t)
    x.requires_grad = True
    return x


def close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-5) -> None:
    a, b = a.detach().double(), b.detach().double()
    assert a.shape == b.shape, (a.shape, b.shape)
    err = (a - b).abs().max().item() if a.numel() else 0.0
    assert err <= tol * (1 + b.abs().max().item()), f"max abs error {err}"
