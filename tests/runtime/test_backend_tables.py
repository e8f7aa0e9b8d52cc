"""Every backend has a kernel for every primitive, and backend failures surface as
BackendError naming the op (never a raw numpy/jax/torch exception)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.dl_backend import DLBackend
from tempo.core.domain import Domain
from tempo.core.dtype import dtypes
from tempo.core.errors import BackendError
from tempo.runtime.backends import jax as jax_be
from tempo.runtime.backends import numpy as np_be
from tempo.runtime.backends import torch as torch_be

TABLES = {"torch": torch_be.KERNELS, "jax": jax_be.KERNELS, "numpy": np_be.KERNELS}
PRIMITIVES = sorted(op.name for op in ops.ALL_OPS)


@pytest.mark.parametrize("backend", sorted(TABLES))
def test_table_covers_every_primitive(backend: str) -> None:
    missing = [name for name in PRIMITIVES if name not in TABLES[backend]]
    assert not missing, f"{backend} has no kernel for {missing}"


@pytest.mark.parametrize("backend", sorted(TABLES))
def test_table_has_no_stray_keys(backend: str) -> None:
    stray = sorted(set(TABLES[backend]) - set(PRIMITIVES))
    assert not stray, f"{backend} kernels for unknown ops {stray}"


def test_tables_have_the_same_keys() -> None:
    assert set(TABLES["jax"]) == set(TABLES["torch"]) == set(TABLES["numpy"])


@pytest.mark.parametrize("name", ["jax", "numpy", "torch", "np", "xla", "pytorch"])
def test_backends_are_registered(name: str) -> None:
    cls = DLBackend.get_backend(name)
    be = cls(dev="cpu", seed=0)
    assert be.name in ("jax", "numpy", "torch")
    assert hasattr(be, "kernel") and hasattr(be, "stack") and hasattr(be, "to_numpy")


def test_lazy_jax_stand_in_builds_the_real_backend() -> None:
    be = DLBackend.get_backend("jax")(dev="cpu", seed=3)
    assert isinstance(be, jax_be.JaxBackend)


def _bool_sub_program(backend: str, tmp: Path) -> Any:
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend, dev="cpu",
                              path=str(tmp) + "/")
    ctx = TempoContext(cfg, num_dims=0)
    with ctx:
        x = RT.const(np.array([True, False]))
        (x - x).sink_udf(lambda v: None)
    return ctx.compile({})


@pytest.mark.parametrize("backend", ["numpy", "jax", "torch"])
def test_unsupported_dtype_raises_backend_error_naming_the_op(backend: str, tmp_path: Path) -> None:
    exe = _bool_sub_program(backend, tmp_path)
    with pytest.raises(BackendError) as info:
        exe.execute()  # numpy, jax and torch all refuse `-` on bools
    msg = str(info.value)
    assert "sub" in msg and backend in msg and "test_backend_tables.py" in msg


def test_user_udf_errors_are_not_wrapped(tmp_path: Path) -> None:
    def boom(v: object) -> None:
        raise KeyError("user bug")

    for backend in ("numpy", "jax"):
        cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend, dev="cpu",
                                  path=str(tmp_path) + "/")
        ctx = TempoContext(cfg, num_dims=0)
        with ctx:
            RT.const(np.ones(2, np.float32)).sink_udf(boom)
        with pytest.raises(KeyError, match="user bug"):
            ctx.compile({}).execute()


def test_numpy_udf_results_with_negative_strides_reach_torch(tmp_path: Path) -> None:
    """torch.from_dlpack aborts the process on negative strides: the backend copies."""
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend="numpy", dev="cpu",
                              path=str(tmp_path) + "/")
    ctx = TempoContext(cfg, num_dims=0)
    with ctx:
        y = RT.const(np.arange(4, dtype=np.float32)).map_udf(lambda v: v[::-1])
    exe = ctx.compile({})
    exe.execute()
    assert exe.get_spatial_tensor_torch(y.tensor_id).tolist() == [3, 2, 1, 0]


def test_from_config_passes_enable_x64() -> None:
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend="jax", dev="cpu")
    be = DLBackend.get_backend("jax").from_config(cfg)
    assert isinstance(be, jax_be.JaxBackend)
    k = be.kernel(ops.MaxOp(op_id=1, domain=Domain.empty(), dim=0))
    _, idx = k(be.from_numpy(np.ones(3), dtypes.float32))
    assert np.asarray(idx).dtype == np.int64  # needs x64
