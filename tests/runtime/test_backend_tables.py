"""Every backend has a kernel for every primitive, and backend failures surface as
BackendError naming the op (never a raw numpy/jax/torch exception)."""

from __future__ import annotations

import numpy as np
import pytest

from tempo.core import ops
from tempo.core.dl_backend import DLBackend
from tempo.core.domain import Domain
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


def _sub_op() -> ops.BinaryOp:
    return ops.BinaryOp(op_id=7, domain=Domain.empty(), fn="sub", site="prog.py:3: x - y")


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_unsupported_dtype_raises_backend_error_naming_the_op(backend: str) -> None:
    be = DLBackend.get_backend(backend)(dev="cpu", seed=0)
    k = be.kernel(_sub_op())
    a = be.from_numpy(np.array([True, False]), _bool())
    with pytest.raises(BackendError) as info:
        k(a, a)  # numpy and jax refuse `-` on bools (as torch does)
    msg = str(info.value)
    assert "sub#7" in msg and backend in msg and "prog.py:3" in msg


def test_numpy_int_pow_negative_is_a_backend_error() -> None:
    be = np_be.NumpyBackend()
    op = ops.BinaryOp(op_id=1, domain=Domain.empty(), fn="pow")
    k = be.kernel(op)
    with pytest.raises(BackendError, match="pow#1"):
        k(np.array([2, 3]), np.array([-1, 2]))


def test_user_udf_errors_are_not_wrapped() -> None:
    def boom(x: object) -> None:
        raise KeyError("user bug")

    for be in (np_be.NumpyBackend(), jax_be.JaxBackend()):
        k = be.kernel(ops.SinkUDFOp(op_id=2, domain=Domain.empty(), fn=boom))
        with pytest.raises(KeyError, match="user bug"):
            k(np.zeros(2))


def _bool():  # noqa: ANN202 - dtype helper
    from tempo.core.dtype import dtypes

    return dtypes.bool_
