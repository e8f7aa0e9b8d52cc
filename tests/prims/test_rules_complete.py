"""Every primitive has all of its rules (grad or NOT_DIFFERENTIABLE, batching or
NO_BATCHING, cost, a kernel on every backend), registered once in `tempo.prims`; importing
the rules loads no backend library; cost estimates are the textbook counts."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

import tempo.prims
from tempo.api.autodiff.grad_rules import NOT_DIFFERENTIABLE
from tempo.compiler.op_rules import NO_BATCHING, Cost, cost, free
from tempo.core import ops
from tempo.core.domain import Domain
from tempo.core.dtype import dtypes
from tempo.core.op_base import Op
from tempo.prims.define import missing_rules
from tempo.prims.movement import ident_kernel

F32, I64 = dtypes.float32, dtypes.int64


def _core_op_classes() -> set[type[Op]]:
    found, work = set(), [Op]
    while work:
        for sub in work.pop().__subclasses__():
            work.append(sub)
            if sub.__module__.startswith("tempo.core."):
                found.add(sub)
    return found


def test_the_catalogue_lists_every_op_class_of_core() -> None:
    assert _core_op_classes() == set(ops.ALL_OPS)


@pytest.mark.parametrize("op_cls", ops.ALL_OPS, ids=lambda c: c.__name__)
def test_every_primitive_has_every_rule(op_cls: type[Op]) -> None:
    assert missing_rules(op_cls) == []


def test_every_primitive_is_registered_once_through_prims() -> None:
    assert sorted(c.__name__ for c in tempo.prims.DEFINED) == sorted(
        c.__name__ for c in ops.ALL_OPS)


def test_an_op_without_rules_is_reported() -> None:
    @dataclasses.dataclass(frozen=True, eq=False, kw_only=True, repr=False)
    class NewOp(Op):
        name = "new_op"

    assert missing_rules(NewOp) == ["grad", "batching", "cost", "torch kernel", "jax kernel",
                                    "numpy kernel"]


def test_registering_twice_is_an_error() -> None:
    with pytest.raises(ValueError, match="twice"):
        tempo.prims.primitive(ops.IdentOp, grad=NOT_DIFFERENTIABLE, batching=NO_BATCHING,
                              cost=free, torch=ident_kernel, jax=ident_kernel,
                              numpy=ident_kernel)


def test_importing_the_rules_loads_no_backend_library() -> None:
    code = ("import sys, tempo.prims; "
            "print(sorted(m for m in ('torch', 'jax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def _op(cls: type[Op], **kw: object) -> Op:
    return cls(op_id=1, domain=Domain.empty(), **kw)


def test_cost_of_matmul_is_two_mkn() -> None:
    c = cost(_op(ops.MatMulOp), [(5, 3, 4), (4, 6)], [F32, F32])
    assert c == Cost(2 * 5 * 3 * 4 * 6, 4 * (5 * 3 * 4 + 4 * 6 + 5 * 3 * 6))


def test_cost_of_elementwise_counts_broadcast_outputs() -> None:
    c = cost(_op(ops.BinaryOp, fn="add"), [(3, 1), (4,)], [F32, F32])
    assert c == Cost(12, 4 * (3 + 4 + 12))
    lt = cost(_op(ops.BinaryOp, fn="lt"), [(8,), (8,)], [I64, I64])
    assert lt == Cost(8, 8 * 8 * 2 + 1 * 8)  # bool output: one byte each


def test_cost_of_a_view_is_nothing_and_of_a_reduction_its_input() -> None:
    assert cost(_op(ops.PermuteOp, dims=(1, 0)), [(3, 4)], [F32]) == Cost(0, 0)
    assert cost(_op(ops.SumOp, dims=(1,)), [(3, 4)], [F32]) == Cost(12, 4 * (12 + 3))


def test_cost_of_conv_counts_weight_products() -> None:
    conv = _op(ops.ConvOp, n_dims=2, stride=(1, 1), padding=(0, 0), dilation=(1, 1))
    c = cost(conv, [(2, 3, 8, 8), (5, 3, 3, 3)], [F32, F32])
    out = 2 * 5 * 6 * 6
    assert c.flops == 2 * out * 3 * 3 * 3
    tconv = _op(ops.ConvOp, n_dims=1, stride=(2,), padding=(0,), dilation=(1,), transposed=True)
    t = cost(tconv, [(1, 4, 5), (4, 2, 3)], [F32, F32])
    assert t.flops == 2 * (1 * 4 * 5) * 2 * 3  # every input element times C_out/g · k


def test_cost_needs_static_shapes() -> None:
    from tempo.core.index_expr import Symbol

    n = Symbol("n")
    with pytest.raises(ValueError, match="static"):
        cost(_op(ops.UnaryOp, fn="exp"), [(n,)], [F32])


def test_op_cost_reads_shapes_and_dtypes_from_the_graph() -> None:
    """x[0:t+1] @ w inside a loop over t: the read's length evaluated at the given t."""
    import numpy as np

    from tempo.api import RecurrentTensor as RT
    from tempo.api import TempoContext
    from tempo.compiler.op_rules import op_cost
    from tempo.core.configs import ExecutionConfig

    ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=1)
    with ctx:
        ((t, T),) = ctx.variables_and_bounds
        x = RT.rand((3,), domain=(t,))
        w = RT.const(np.ones((3, 2), np.float32))
        y = x[0:t + 1] @ w
    c = op_cost(ctx.sdg, y.tensor_id.op_id, {t: 4, T: 10})
    assert c == Cost(2 * 5 * 3 * 2, 4 * (5 * 3 + 3 * 2 + 5 * 2))
