"""User mistakes, one per case: each must raise the right `TempoError` subclass, name the
line that made the mistake (marked `# MISTAKE`, not a later sink or compile call), and speak
the user's words: no internal ids (`T3.0`, `add#2`, isl sets `{ S2[...] }`).

A case is a function of the test config; `run_case` executes it, finds its `# MISTAKE` line
and checks the error against it."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import errors
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.runtime.codegen import UndefinedPointError
from tempo.runtime.missing import TensorNotAvailableError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mistakes import check_mistake  # noqa: E402


def ctx1(cfg: ExecutionConfig) -> tuple[TempoContext, Any, Any]:
    ctx = TempoContext(cfg, num_dims=1, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    return ctx, t, T


def ctx2(cfg: ExecutionConfig) -> tuple[TempoContext, Any, Any, Any, Any]:
    ctx = TempoContext(cfg, num_dims=2, dim_names=("b", "t"))
    ((b, B), (t, T)) = ctx.variables_and_bounds
    return ctx, b, B, t, T


def sink(x: Any) -> None:
    x.sink_udf(lambda v: None)


# ---------------------------------------------------------------- definitions
def definition_of_the_wrong_shape(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.placeholder((3,), dtypes.float32, domain=(t,))
        x[True] = RT.zeros((4,))  # MISTAKE


def definition_of_the_wrong_dtype(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        x[True] = RT.from_symbol(t)  # MISTAKE


def definition_over_a_larger_domain(cfg: ExecutionConfig) -> None:
    ctx, b, B, t, T = ctx2(cfg)
    with ctx:
        x = RT.placeholder((), dtypes.int64, domain=(t,))
        x[True] = RT.from_symbol(b) + RT.from_symbol(t)  # MISTAKE


def assigning_a_tensor_that_is_not_a_placeholder(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.from_symbol(t) * 2
        x[True] = RT.from_symbol(t)  # MISTAKE


def base_case_written_after_the_recursive_case(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        o = RT.placeholder((), dtypes.float32, domain=(t,))
        o[True] = o[t - 1] + 1.0
        o[0] = RT.const(0.0)  # MISTAKE


def missing_base_case_with_shift_sugar(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        o = RT.placeholder((), dtypes.float32, domain=(t,))
        o[t + 1] = o + 1.0  # MISTAKE
        sink(o)
    ctx.compile({T: 4})


def missing_base_case_of_a_recurrence(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        o = RT.placeholder((), dtypes.float32, domain=(t,))
        o[True] = o[t - 1] + 1.0  # MISTAKE
        sink(o * 2.0)
    ctx.compile({T: 4})


def same_point_cycle(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        a = RT.placeholder((), dtypes.float32, domain=(t,))
        b = a * 2.0
        a[True] = b + 1.0  # MISTAKE
        sink(b)
    ctx.compile({T: 3})


def a_point_no_definition_covers(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        x[t < 2] = RT.const(1.0)  # MISTAKE
        sink(x)
    ctx.compile({T: 4}).execute()


# ---------------------------------------------------------------- reads out of range
def future_read_past_the_end(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.from_symbol(t)
        y = x[t + 5]  # MISTAKE
        z = y * 2
        sink(z)
    ctx.compile({T: 10})


def previous_read_of_an_input_without_base_case(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.random((), domain=(t,))
        d = x - x[t - 1]  # MISTAKE
        sink(d)
    ctx.compile({T: 10})


def constant_index_past_the_bound(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.from_symbol(t)
        y = x[7]  # MISTAKE
        sink(y + 1)
    ctx.compile({T: 5})


def window_read_past_the_end(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.from_symbol(t)
        w = x[t:t + 3]  # MISTAKE
        sink(w.sum())
    ctx.compile({T: 6})


# ---------------------------------------------------------------- indices and symbols
def symbol_of_another_context(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    z = ie.symbols("z")
    with ctx:
        x = RT.from_symbol(t)
        x[z]  # MISTAKE


def too_many_indices(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.placeholder((3,), dtypes.float32, domain=(t,))
        x[t, 0, 1]  # MISTAKE


def two_ellipses(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.placeholder((3,), dtypes.float32, domain=(t,))
        x[..., ...]  # MISTAKE


def python_max_instead_of_index_max(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.from_symbol(t)
        x[max(t - 1, 0)]  # MISTAKE


def stack_of_no_tensors(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        RT.stack([])  # MISTAKE


def python_if_on_a_tensor(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.from_symbol(t)
        if x > 2:  # MISTAKE
            pass


def index_that_is_not_affine(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.from_symbol(t)
        x[t * t]  # MISTAKE


def symbolic_slice_with_a_step(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.from_symbol(t)
        x[0:T:2]  # MISTAKE


def dim_names_that_disagree_with_num_dims(cfg: ExecutionConfig) -> None:
    TempoContext(cfg, num_dims=2, dim_names=("t",))  # MISTAKE


def dim_name_that_is_a_reserved_word(cfg: ExecutionConfig) -> None:
    TempoContext(cfg, num_dims=1, dim_names=("max",))  # MISTAKE


def tensor_of_another_context(cfg: ExecutionConfig) -> None:
    first, t, T = ctx1(cfg)
    with first:
        x = RT.from_symbol(t) * 2  # MISTAKE
    second, t2, T2 = ctx1(cfg)
    with second:
        sink(x + RT.ones(()))


# ---------------------------------------------------------------- compile
def bound_of_another_context(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    other, _, B, _, _ = ctx2(cfg)
    with ctx:
        sink(RT.from_symbol(t))
    ctx.compile({T: 3, B: 2})  # MISTAKE


def missing_bound(cfg: ExecutionConfig) -> None:
    ctx, b, B, t, T = ctx2(cfg)
    with ctx:
        sink(RT.from_symbol(t))
    ctx.compile({T: 3})  # MISTAKE


def bound_that_is_not_positive(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        sink(RT.from_symbol(t))
    ctx.compile({T: 0})  # MISTAKE


def bound_keyed_by_the_variable(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        sink(RT.from_symbol(t))
    ctx.compile({t: 3})  # MISTAKE


# ---------------------------------------------------------------- ops
def spatial_shapes_that_do_not_broadcast(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        a = RT.zeros((3,))
        a + RT.zeros((4,))  # MISTAKE


def matmul_of_mismatched_shapes(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        a = RT.zeros((2, 3))
        a @ RT.zeros((4, 5))  # MISTAKE


def reshape_to_another_size(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        a = RT.zeros((2, 3))
        a.reshape((4, 2))  # MISTAKE


def sum_over_a_dim_that_does_not_exist(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        a = RT.zeros((2, 3))
        a.sum(3)  # MISTAKE


def adding_a_string(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        a = RT.zeros((2,))
        a + "1"  # MISTAKE


def cast_to_an_unknown_dtype(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        a = RT.zeros((2,))
        a.cast("float33")  # MISTAKE


def backward_of_a_non_scalar(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        w = RT.ones((3,), requires_grad=True)
        loss = w * 2.0
        loss.backward()  # MISTAKE


def requires_grad_on_an_integer_leaf(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        w = RT.const([1, 2, 3], dtype=dtypes.int64, requires_grad=True)  # MISTAKE
        (w * 2).sum().backward()  # would leave w.grad None


def backward_of_a_tensor_without_requires_grad(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        w = RT.ones((3,), requires_grad=False)
        loss = w.sum()
        loss.backward()  # MISTAKE


def optimizer_step_without_backward(cfg: ExecutionConfig) -> None:
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD

    ctx, t, T = ctx1(cfg)
    with ctx:
        layer = Linear(2, 3, domain=(t,))
        SGD(layer.parameters, lr=0.1).step()  # MISTAKE


# ---------------------------------------------------------------- user functions
def source_udf_of_the_wrong_shape(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.source_udf(lambda: torch.zeros(4), (3,), dtypes.float32, (t,))  # MISTAKE
        sink(x + 1.0)
    ctx.compile({T: 3}).execute()


def source_with_ts_udf_of_the_wrong_dtype(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: torch.arange(3), (3,), dtypes.float32,  # MISTAKE
                                  (t,))
        sink(x * 2.0)
    ctx.compile({T: 3}).execute()


def map_udf_of_the_wrong_shape(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.ones((3,)) * RT.from_symbol(t)
        y = x.map_udf(lambda v: v.sum())  # MISTAKE
        sink(y)
    ctx.compile({T: 3}).execute()


# ---------------------------------------------------------------- executor and config
def reading_a_tensor_dead_code_elimination_removed(cfg: ExecutionConfig) -> None:
    cfg = dataclasses.replace(cfg, enable_dead_code_elim=True)
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.from_symbol(t)
        unused = x * 3  # MISTAKE
        sink(x + 1)
    exe = ctx.compile({T: 3})
    exe.execute()
    exe.get_spatial_tensor_torch(unused.tensor_id, (0,))


def reading_a_point_garbage_collection_freed(cfg: ExecutionConfig) -> None:
    cfg = dataclasses.replace(cfg, enable_gc=True)
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.from_symbol(t)
        y = x * 3  # MISTAKE
        sink(y + 1)
    exe = ctx.compile({T: 3})
    exe.execute()
    exe.get_spatial_tensor_torch(y.tensor_id, (0,))


def when_given_a_tensor_condition(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.random((), domain=(t,))
        h = RT.placeholder((), dtypes.float32, domain=(t,))
        with ctx.when(x > 0.5):  # MISTAKE
            h[True] = x


def spatial_slice_past_the_size(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        sink(RT.ones((3,))[1:5])  # MISTAKE


def spatial_slice_by_a_bound_past_the_size(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.ones((4,)) * 2.0
        sink(x[0:T])  # MISTAKE
    ctx.compile({T: 6}).execute()


def bad_config_value(cfg: ExecutionConfig) -> None:
    ExecutionConfig(dev="tpu")  # MISTAKE


def bad_config_value_in_replace(cfg: ExecutionConfig) -> None:
    dataclasses.replace(cfg, inc_statify_block_size=0)  # MISTAKE


def memory_cap_below_the_program_s_need(cfg: ExecutionConfig) -> None:
    cfg = dataclasses.replace(cfg, device_memory_cap_bytes=64)
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.ones((100,)) * RT.from_symbol(t)  # MISTAKE
        sink(x)
    ctx.compile({T: 4}).execute()


CASES: list[tuple[Callable[[ExecutionConfig], None], type[Exception], tuple[str, ...]]] = [
    (definition_of_the_wrong_shape, errors.ShapeError, ("(3,)", "(4,)")),
    (definition_of_the_wrong_dtype, errors.DTypeError, ("float32", "int64")),
    (definition_over_a_larger_domain, errors.DomainError, ("(b, t)",)),
    (assigning_a_tensor_that_is_not_a_placeholder, errors.TempoError, ("placeholder",)),
    (base_case_written_after_the_recursive_case, errors.DefinitionError, ("o[True]", "order")),
    (missing_base_case_with_shift_sugar, errors.IndexExprError, ("base case",)),
    (missing_base_case_of_a_recurrence, errors.IndexExprError, ("before the start", "base")),
    (same_point_cycle, errors.ScheduleError, ("same point", "b = a * 2.0")),
    (a_point_no_definition_covers, UndefinedPointError, ("t = 2",)),
    (future_read_past_the_end, errors.IndexExprError, ("past the end T - 1", "t >= T - 5",
                                                         "ie.min(t + 5, T - 1)")),
    (previous_read_of_an_input_without_base_case, errors.IndexExprError,
     ("before the start 0", "ie.max(t - 1, 0)")),
    (constant_index_past_the_bound, errors.IndexExprError, ("7", "past the end")),
    (window_read_past_the_end, errors.IndexExprError, ("past the end",)),
    (symbol_of_another_context, errors.IndexExprError, ("z", "(t)")),
    (too_many_indices, errors.IndexExprError, ("3 indices",)),
    (two_ellipses, errors.IndexExprError, ("...",)),
    (python_max_instead_of_index_max, errors.IndexExprError, ("ie.max",)),
    (stack_of_no_tensors, errors.ArgumentError, ("stack of no tensors",)),
    (python_if_on_a_tensor, errors.TempoError, ("where",)),
    (index_that_is_not_affine, errors.IndexExprError, ("t * t", "affine")),
    (symbolic_slice_with_a_step, errors.IndexExprError, ("step",)),
    (dim_names_that_disagree_with_num_dims, errors.IndexExprError, ("dim_names",)),
    (dim_name_that_is_a_reserved_word, errors.IndexExprError, ("max",)),
    (tensor_of_another_context, errors.TempoError, ("another TempoContext",)),
    (bound_of_another_context, errors.BoundError, ("not a bound",)),
    (missing_bound, errors.BoundError, ("B",)),
    (bound_that_is_not_positive, errors.BoundError, ("T",)),
    (bound_keyed_by_the_variable, errors.BoundError, ("bound",)),
    (spatial_shapes_that_do_not_broadcast, errors.ShapeError, ("(3,)", "(4,)")),
    (matmul_of_mismatched_shapes, errors.ShapeError, ("matmul",)),
    (reshape_to_another_size, errors.ShapeError, ("reshape",)),
    (sum_over_a_dim_that_does_not_exist, errors.ShapeError, ("3",)),
    (adding_a_string, errors.DTypeError, ("str",)),
    (cast_to_an_unknown_dtype, errors.DTypeError, ("float33",)),
    (backward_of_a_non_scalar, errors.ShapeError, ("scalar",)),
    (optimizer_step_without_backward, errors.TempoError, (".grad", "backward()")),
    (backward_of_a_tensor_without_requires_grad, errors.TempoError, ("requires_grad",)),
    (requires_grad_on_an_integer_leaf, errors.DTypeError, ("float", "int64")),
    (source_udf_of_the_wrong_shape, errors.ShapeError, ("(4,)", "(3,)", "source_udf")),
    (source_with_ts_udf_of_the_wrong_dtype, errors.DTypeError, ("int64", "float32")),
    (map_udf_of_the_wrong_shape, errors.ShapeError, ("()", "(3,)", "map_udf")),
    (reading_a_tensor_dead_code_elimination_removed, TensorNotAvailableError,
     ("dead-code elimination", "sink_udf")),
    (reading_a_point_garbage_collection_freed, TensorNotAvailableError,
     ("t = 0", "enable_gc=False")),
    (when_given_a_tensor_condition, errors.IndexExprError,
     ("when()", "x > 0.5", "t < 5", "where(")),
    (spatial_slice_past_the_size, errors.ShapeError, ("1:5", "size 3")),
    (spatial_slice_by_a_bound_past_the_size, errors.ShapeError,
     ("x[0:T]", "0:6", "size 4", "T = 6")),
    (bad_config_value, errors.ConfigError, ("tpu",)),
    (bad_config_value_in_replace, errors.ConfigError, ("inc_statify_block_size",)),
    (memory_cap_below_the_program_s_need, errors.TempoMemoryError,
     ("device_memory_cap_bytes=64",)),
]


def test_there_are_at_least_25_mistakes() -> None:
    assert len(CASES) >= 25
    assert len({case.__name__ for case, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize("case, cls, words", CASES, ids=[c.__name__ for c, _, _ in CASES])
def test_user_mistake(case: Callable[[ExecutionConfig], None], cls: type[Exception],
                      words: tuple[str, ...], cfg: ExecutionConfig) -> None:
    check_mistake(case, cls, words, cfg)


def test_a_name_given_by_the_user_is_used(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        h = RT.placeholder((3,), dtypes.float32, domain=(t,), name="hidden")
        with pytest.raises(errors.ShapeError, match="'hidden'"):
            h[True] = RT.zeros((2,))
        x = RT.source_udf(lambda: torch.zeros(2), (3,), dtypes.float32, (t,), name="frames")
        sink(x + 1.0)
    with pytest.raises(errors.ShapeError, match="'frames'"):
        ctx.compile({T: 2}).execute()


def test_dims_print_by_their_names() -> None:
    ctx = TempoContext(ExecutionConfig.test_cfg(), num_dims=2, dim_names=("batch", "step"))
    (b, B), (s, S) = ctx.variables_and_bounds
    assert (str(b), str(B), str(s), str(S)) == ("batch", "BATCH", "step", "STEP")
    with ctx:
        x = RT.from_symbol(s)
        sink(x[s + 1])
    with pytest.raises(errors.IndexExprError) as info:
        ctx.compile({B: 2, S: 4})
    assert "past the end STEP - 1 of step" in str(info.value)
    assert "d0" not in str(info.value) and "D1" not in str(info.value)
