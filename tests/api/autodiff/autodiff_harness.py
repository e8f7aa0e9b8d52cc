"""Build a Tempo program with grad-requiring leaves, run its backward, read the `.grad`s;
tests compare them with PyTorch autograd on the same computation unrolled."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dl_backend import DLBackend
from tempo.core.dtype import dtypes

DEFAULT_BACKEND = "torch"
"""The backend `Prog` compiles for unless told (set per test by conftest's `backend`)."""


def backends() -> list[str]:
    """The backends the tests run on: those that load. Backends register lazily, so ask for
    each by name (`get_backend` imports `tempo.runtime.backends`) instead of listing the
    registry, and check that jax itself imports."""
    out = []
    for name in ("torch", "jax"):
        try:
            DLBackend.get_backend(name)
            if name == "jax":
                import jax  # noqa: F401
        except Exception:  # noqa: BLE001, S112 - not available here
            continue
        out.append(name)
    return out


class Prog:
    """One program: a context, its variables/bounds, and leaves whose grads we read."""

    def __init__(self, num_dims: int, backend: str | None = None, **cfg_fields: Any) -> None:
        cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend or DEFAULT_BACKEND,
                                  **cfg_fields)
        self.ctx = TempoContext(cfg, num_dims=num_dims)
        self.vb = self.ctx.variables_and_bounds
        self.leaves: list[RT] = []

    def source(self, data: np.ndarray, dom: Sequence[Any], requires_grad: bool | None = None) -> RT:
        """`data[point]` at each point of `dom` (a placeholder defined by a source UDF)."""
        dt = dtypes.from_(str(data.dtype)) if data.dtype != np.float32 else dtypes.float32
        if not dom:
            x = RT.const(data, dtype=dt, requires_grad=requires_grad)
        else:
            shape = data.shape[len(dom):]
            x = RT.placeholder(shape, dt, domain=tuple(dom), requires_grad=requires_grad)
            dom_ = tuple(dom)

            def fn(ts: dict) -> torch.Tensor:
                # np.array, not ascontiguousarray: that one makes a 0-d point 1-d
                return torch.from_numpy(np.array(data[tuple(ts[v] for v in dom_)]))

            x[True] = RT.source_with_ts_udf(fn, shape, dt, domain=dom_)
        if requires_grad:
            self.leaves.append(x)
        return x

    def leaf(self, data: np.ndarray, dom: Sequence[Any] = ()) -> RT:
        return self.source(data, dom, requires_grad=True)

    def run(self, bounds: dict) -> list[torch.Tensor]:
        """Compile, execute, and return the grad of every leaf (stacked over its domain)."""
        exe = self.ctx.compile(bounds)
        exe.execute()
        out = []
        for x in self.leaves:
            assert x.grad is not None, f"leaf {x.tensor_id!r} got no grad"
            idx = tuple(slice(None) for _ in x.grad.op.domain.variables)
            out.append(exe.get_spatial_tensor_torch(x.grad.tensor_id, idx).detach().cpu())
        return out


def recurrence(backend: str, xs: np.ndarray, w: float, x_leaf: bool = True) -> tuple:
    """A program over t with input `x` (a leaf, or a source without grad), a scalar
    parameter leaf `w`, and an undefined recurrence `h` shaped like one step of `x`:
    (prog, t, T, x, w, h)."""
    from tempo.api.ops.creation import placeholder

    p = Prog(1, backend)
    (t, T), = p.vb
    with p.ctx:
        x = p.leaf(xs, (t,)) if x_leaf else p.source(xs, (t,))
        wt = p.leaf(np.array(w, dtype=np.float32))
        h = placeholder(xs.shape[1:], dtypes.float32, domain=(t,))
    return p, t, T, x, wt, h


def rnd(*shape: int, dtype: Any = np.float32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed + 17 * len(shape) + sum(shape))
    return rng.standard_normal(shape).astype(dtype)


def torch_grads(fn: Any, *arrays: np.ndarray) -> list[torch.Tensor]:
    """Gradients of `fn(*tensors)` (a scalar) by PyTorch autograd."""
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    fn(*ts).backward()
    return [t.grad if t.grad is not None else torch.zeros_like(t) for t in ts]


def assert_close(got: list[torch.Tensor], want: list[torch.Tensor], atol: float = 1e-5) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape), (g.shape, w.shape)
        rtol = 1e-4 if w.dtype == torch.float32 else 1e-9
        torch.testing.assert_close(g.to(w.dtype), w, atol=atol, rtol=rtol)
