"""Generated torch code runs below torch's autograd dispatch keys (`backends.torch_autograd`):
it builds no autograd graph even from a tensor that requires grad, while user functions
still have torch's autograd, and the keys are back on after the run (also a failed one)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.runtime.backends.torch_autograd import autograd_keys, below_autograd, with_autograd


def _cfg(tmp: Path) -> ExecutionConfig:
    return dataclasses.replace(ExecutionConfig.test_cfg(), backend="torch", dev="cpu",
                               path=str(tmp) + "/")


def _autograd_on() -> bool:
    return bool((torch.ones(1, requires_grad=True) * 2).requires_grad)


def test_the_guard_excludes_the_autograd_keys_and_restores_them() -> None:
    assert autograd_keys()  # (the build's autograd keys: at least AutogradFunctionality)
    assert _autograd_on()
    with below_autograd():
        assert not _autograd_on()
    assert _autograd_on()


def test_keys_found_inside_the_guard_are_restored_exactly() -> None:
    """The keys may first be looked up during a run (inside the guard); a user function
    then still gets autograd, and no key stays excluded after it (alias keys such as
    `Autograd` answer for themselves and are never toggled)."""
    def grad_of_double() -> Any:
        p = torch.ones(2, requires_grad=True)
        (p * 2.0).sum().backward()
        return p.grad

    excluded = torch._C._dispatch_tls_is_dispatch_key_excluded
    autograd_keys.cache_clear()
    with below_autograd():
        keys = autograd_keys()
        assert keys and all(k.name.startswith("Autograd") for k in keys)
        assert not any(torch._C._dispatch_is_alias_key(k) for k in keys)
        assert with_autograd(grad_of_double)().tolist() == [2.0, 2.0]
        assert all(excluded(k) for k in keys) and not _autograd_on()
    assert not any(excluded(k) for k in keys) and _autograd_on()


def test_ops_on_a_tensor_that_requires_grad_build_no_graph(tmp_path: Path) -> None:
    """A UDF may hand the program a tensor that requires grad (a torch parameter): the
    generated code uses it as a value. Under autograd each op on it made a graph node
    holding its inputs (the result required grad and kept a grad_fn)."""
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    ctx = TempoContext(_cfg(tmp_path), num_dims=0)
    with ctx:
        x = RT.source_udf(lambda: w * 1.0, (3,), dtypes.float32)
        y = (x * 2.0 + 1.0).exp()
    exe = ctx.compile({})
    exe.execute()
    out = exe.get_spatial_tensor_torch(y.tensor_id)
    assert not out.requires_grad and out.grad_fn is None
    np.testing.assert_allclose(out.numpy(), np.exp(np.array([1.0, 2.0, 3.0]) * 2 + 1),
                               rtol=1e-6)
    assert _autograd_on()


def test_user_functions_keep_torch_autograd(tmp_path: Path) -> None:
    """A sink and a map that differentiate with torch's autograd inside (d/dw sum(w*x)
    = x), as they could before generated code ran below autograd."""
    grads: list[Any] = []

    def sink(v: Any) -> None:
        w = torch.zeros(3, requires_grad=True)
        (w * v).sum().backward()
        grads.append(w.grad.clone())

    def grad_of_square(v: Any) -> Any:
        x = v.detach().clone().requires_grad_(True)
        (x * x).sum().backward()
        return x.grad  # 2x

    ctx = TempoContext(_cfg(tmp_path), num_dims=0)
    with ctx:
        x = RT.const(np.array([1.0, 2.0, 3.0], np.float32))
        (x + 1.0).sink_udf(sink)
        g = (x * 3.0).map_udf(grad_of_square, shape=(3,), dtype=dtypes.float32)
    exe = ctx.compile({})
    exe.execute()
    assert grads and grads[0].tolist() == [2.0, 3.0, 4.0]
    assert exe.get_spatial_tensor_torch(g.tensor_id).tolist() == [6.0, 12.0, 18.0]


def test_autograd_is_back_after_a_failed_run(tmp_path: Path) -> None:
    def boom(v: Any) -> None:
        raise KeyError("user bug")

    ctx = TempoContext(_cfg(tmp_path), num_dims=0)
    with ctx:
        (RT.const(np.ones(2, np.float32)) * 2.0).sink_udf(boom)
    with pytest.raises(KeyError, match="user bug"):
        ctx.compile({}).execute()
    assert _autograd_on()
