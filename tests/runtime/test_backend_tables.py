"""Every backend has a kernel for every primitive, and backend failures surface as
BackendError naming the op (never a raw numpy/jax/torch exception)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tempo.prims  # noqa: F401 - registers the kernels these tests call
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
from tempo.runtime.backends.protocol import Backend
from tempo.runtime.kernel_registry import registered_kernels

TABLES = {name: registered_kernels(name) for name in ("torch", "jax", "numpy")}


@pytest.mark.parametrize("backend", sorted(TABLES))
def test_table_covers_every_primitive(backend: str) -> None:
    missing = [op.name for op in ops.ALL_OPS if op not in TABLES[backend]]
    assert not missing, f"{backend} has no kernel for {missing}"


@pytest.mark.parametrize("backend", sorted(TABLES))
def test_table_has_no_stray_keys(backend: str) -> None:
    stray = sorted(op.__name__ for op in set(TABLES[backend]) - set(ops.ALL_OPS))
    assert not stray, f"{backend} kernels for unknown ops {stray}"


def test_tables_have_the_same_keys() -> None:
    assert set(TABLES["jax"]) == set(TABLES["torch"]) == set(TABLES["numpy"])


def test_a_backend_without_the_kernel_names_the_op() -> None:
    """An op class nobody registered: a BackendError naming it, not a KeyError."""

    @dataclasses.dataclass(frozen=True, eq=False, kw_only=True, repr=False)
    class NewOp(ops.Op):
        name = "new_op"

    with pytest.raises(BackendError, match="new_op"):
        np_be.NumpyBackend().kernel(NewOp(op_id=3, domain=Domain.empty()))


@pytest.mark.parametrize("name", ["jax", "numpy", "torch", "np", "xla", "pytorch"])
def test_backends_are_registered_and_implement_the_protocol(name: str) -> None:
    cls = DLBackend.get_backend(name)
    be = cls.from_config(dataclasses.replace(ExecutionConfig.test_cfg(), backend=name))
    assert be.name in ("jax", "numpy", "torch")
    assert isinstance(be, Backend)
    missing = [m for m in dir(Backend) if not m.startswith("_") and not hasattr(cls, m)]
    assert not missing


def test_jax_registers_lazily_by_name() -> None:
    """jax (~2 s to import) is imported on the first get_backend, not with the runtime."""
    assert DLBackend.get_backend("jax") is jax_be.JaxBackend


@pytest.mark.parametrize("name", ["torch", "jax", "numpy"])
def test_conversions_are_static(name: str) -> None:
    """API §4.1: `DLBackend.get_backend(name).from_dlpack(x)` works on the class."""
    import torch

    cls = DLBackend.get_backend(name)
    x = cls.from_dlpack(torch.arange(3.0))
    assert cls.shape_of(x) == (3,) and cls.dtype_name(x) == "float" and cls.nbytes(x) == 12
    np.testing.assert_array_equal(cls.to_numpy(x), [0.0, 1.0, 2.0])
    assert cls.to_torch(x).tolist() == [0.0, 1.0, 2.0]
    assert cls.move_to_front(cls.from_dlpack(np.zeros((2, 3))), 1).shape == (3, 2)


def test_jax_has_no_block_stores() -> None:
    from tempo.core.errors import UnsupportedError

    be = jax_be.JaxBackend()
    assert not be.block_stores
    with pytest.raises(UnsupportedError):
        be.alloc_block(2, (3,), dtypes.float32)


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
