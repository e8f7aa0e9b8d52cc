"""User mistakes with autodiff, optimisers, nn layers, distributions, RL objectives and
index expressions (found by the acceptance sweeps, accept3 n05/n07/n13/n17 and after):
each must raise the right `TempoError` subclass naming the `# MISTAKE` line in the user's
words (tests/core/mistakes.py), where it was silent, a bare Python error, a hang, or a
message in internal terms."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.autodiff import GradientError
from tempo.core import errors
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mistakes import check_mistake  # noqa: E402


def ctx1(cfg: ExecutionConfig, name: str = "t") -> tuple[TempoContext, Any, Any]:
    ctx = TempoContext(cfg, num_dims=1, dim_names=(name,))
    ((t, T),) = ctx.variables_and_bounds
    return ctx, t, T


# ---------------------------------------------------------------- autodiff and optimisers
def backward_when_nothing_requires_grad(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        w = RT.ones((3,))  # forgot requires_grad=True
        loss = (w * 2.0).sum()
        loss.backward()  # MISTAKE


def optimizer_step_called_twice(cfg: ExecutionConfig) -> None:
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD

    ctx, i, I = ctx1(cfg, "i")  # noqa: E741
    with ctx:
        layer = Linear(2, 1, domain=(i,))
        opt = SGD(layer.parameters, lr=0.1)
        layer(RT.ones((2,))).sum().backward()
        opt.step()
        opt.step()  # MISTAKE


def two_optimizers_stepping_one_layer(cfg: ExecutionConfig) -> None:
    """A second optimizer over the same parameters is a second update rule (API §6.2:
    step() defines every parameter's next value): refused as a second step() is."""
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD, Adam

    ctx, i, I = ctx1(cfg, "i")  # noqa: E741
    with ctx:
        layer = Linear(2, 1, domain=(i,))
        layer(RT.ones((2,))).sum().backward()
        SGD(layer.parameters, lr=0.1).step()
        Adam(layer.parameters, lr=0.1).step()  # MISTAKE


def optimizer_step_after_fixed(cfg: ExecutionConfig) -> None:
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD

    ctx, i, I = ctx1(cfg, "i")  # noqa: E741
    with ctx:
        layer = Linear(2, 1, domain=(i,))
        layer.fixed()
        layer(RT.ones((2,))).sum().backward()
        SGD(layer.parameters, lr=0.1).step()  # MISTAKE


def optimizer_given_the_module(cfg: ExecutionConfig) -> None:
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD

    ctx, i, I = ctx1(cfg, "i")  # noqa: E741
    with ctx:
        layer = Linear(2, 1, domain=(i,))
        SGD(layer, lr=0.1)  # MISTAKE


def adam_with_a_negative_learning_rate(cfg: ExecutionConfig) -> None:
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import Adam

    ctx, i, I = ctx1(cfg, "i")  # noqa: E741
    with ctx:
        layer = Linear(2, 1, domain=(i,))
        Adam(layer.parameters, lr=-1e-3)  # MISTAKE


def adam_with_b1_of_one(cfg: ExecutionConfig) -> None:
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import Adam

    ctx, i, I = ctx1(cfg, "i")  # noqa: E741
    with ctx:
        layer = Linear(2, 1, domain=(i,))
        Adam(layer.parameters, b1=1.0)  # MISTAKE


# ---------------------------------------------------------------- nn layers
def linear_on_integer_token_ids(cfg: ExecutionConfig) -> None:
    from tempo.api.nn import Linear

    ctx, t, T = ctx1(cfg)
    with ctx:
        ids = RT.const([1, 2, 3], dtype=dtypes.int64)
        Linear(3, 2)(ids)  # MISTAKE


def linear_with_the_wrong_in_features(cfg: ExecutionConfig) -> None:
    from tempo.api.nn import Linear

    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.ones((3,))
        Linear(4, 2)(x)  # MISTAKE


def conv_on_integer_pixels(cfg: ExecutionConfig) -> None:
    from tempo.api.nn import Conv2d

    ctx, t, T = ctx1(cfg)
    with ctx:
        img = RT.const(np.zeros((1, 3, 4, 4), dtype=np.uint8))
        Conv2d(3, 2, 3)(img)  # MISTAKE


def one_hot_of_float_classes(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        c = RT.const(1.0)
        c.one_hot(4)  # MISTAKE


# ---------------------------------------------------------------- index expressions
def float_offset_in_an_index(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.ones((3,)) * t
        x[t - 0.5]  # MISTAKE


def index_divided_by_a_symbol(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.ones((3,)) * t
        x[t // T]  # MISTAKE


def from_symbol_of_an_expression(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        RT.from_symbol(T - 1 - t)  # MISTAKE


# ---------------------------------------------------------------- distributions and RL
def categorical_mean(cfg: ExecutionConfig) -> None:
    from tempo.api.distributions import Categorical

    ctx, t, T = ctx1(cfg)
    with ctx:
        d = Categorical(probs=RT.ones((4,)) / 4.0)
        d.mean  # MISTAKE  # noqa: B018


def gae_over_tensors_without_the_time_dim(cfg: ExecutionConfig) -> None:
    from tempo.api.rl import gae

    ctx = TempoContext(cfg, num_dims=2, dim_names=("b", "t"))
    ((b, B), (t, T)) = ctx.variables_and_bounds
    with ctx:
        r = RT.from_symbol(b).cast(dtypes.float32)
        gae(r, r, t)  # MISTAKE


def cat_of_shapes_that_differ(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        a, b = RT.ones((2, 3)), RT.ones((2, 4))
        RT.cat([a, b], dim=0)  # MISTAKE


def normal_whose_parameters_do_not_broadcast(cfg: ExecutionConfig) -> None:
    from tempo.api.distributions import Normal

    ctx, t, T = ctx1(cfg)
    with ctx:
        mu, sigma = RT.zeros((3,)), RT.ones((4,))
        Normal(mu, sigma)  # MISTAKE


def conv_given_the_wrong_channels(cfg: ExecutionConfig) -> None:
    from tempo.api.nn import Conv2d

    ctx, t, T = ctx1(cfg)
    with ctx:
        img = RT.ones((1, 2, 8, 8))
        Conv2d(3, 4, 3)(img)  # MISTAKE


def lstm_cell_given_h_without_c(cfg: ExecutionConfig) -> None:
    from tempo.api.nn.rnn import LSTMCell

    ctx, t, T = ctx1(cfg)
    with ctx:
        cell = LSTMCell(3, 4)
        cell(RT.ones((3,)), RT.zeros((4,)))  # MISTAKE


def clip_norm_of_no_gradients(cfg: ExecutionConfig) -> None:
    from tempo.api.nn.utils import clip_norm

    ctx, t, T = ctx1(cfg)
    with ctx:
        grads: list[Any] = []
        clip_norm(grads, 1.0)  # MISTAKE


def random_int_with_an_empty_range(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        RT.random_int(5, 2, shape=(3,))  # MISTAKE


def when_given_an_integer(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        with ctx.when(t):  # MISTAKE
            x[True] = RT.const(1.0)


def sink_udf_given_a_value(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        RT.from_symbol(t).sink_udf(print(t))  # MISTAKE
    ctx.compile({T: 2}).execute()


def placeholder_over_a_foreign_symbol(cfg: ExecutionConfig) -> None:
    from tempo.core import index_expr as ie

    ctx, t, T = ctx1(cfg)
    z = ie.symbols("z")
    with ctx:
        RT.placeholder((3,), domain=(z,))  # MISTAKE


def llama_given_a_token_without_the_time_dim(cfg: ExecutionConfig) -> None:
    from tempo.api.llm.models.llama import Llama, LlamaArgs

    ctx, t, T = ctx1(cfg)
    with ctx:
        model = Llama(LlamaArgs(dim=8, n_heads=2, n_layers=1, vocab_size=11, multiple_of=4), t)
        token = RT.const(1, dtype=dtypes.int64)  # one token for every t
        model(token)  # MISTAKE


def state_dict_key_that_is_missing(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        sd = {"w": torch.zeros(3)}
        RT.init_from_statedict(sd, "b", shape=(3,), dtype=dtypes.float32)  # MISTAKE


def reading_a_point_with_too_few_indices(cfg: ExecutionConfig) -> None:
    ctx = TempoContext(cfg, num_dims=2, dim_names=("b", "t"))
    ((b, B), (t, T)) = ctx.variables_and_bounds
    with ctx:
        x = RT.from_symbol(t) + RT.from_symbol(b)
        x.sink_udf(lambda v: None)
    exe = ctx.compile({B: 2, T: 3})
    exe.execute()
    exe.get_spatial_tensor_torch(x.tensor_id, (0,))  # MISTAKE


def sum_over_dims_given_as_a_string(cfg: ExecutionConfig) -> None:
    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.ones((2, 3))
        x.sum(dims="0")  # MISTAKE


def sgd_given_a_learning_rate_schedule_tensor(cfg: ExecutionConfig) -> None:
    """accept6 m01: was 'a RecurrentTensor has no truth value' (true, but not the point)."""
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD

    ctx, i, I = ctx1(cfg, "i")  # noqa: E741
    with ctx:
        layer = Linear(3, 1, domain=(i,))
        layer(RT.ones((3,))).sum().backward()
        SGD(layer.parameters, lr=0.1 * 0.9 ** RT.from_symbol(i)).step()  # MISTAKE


def replay_sampled_with_no_token(cfg: ExecutionConfig) -> None:
    """accept6 m04: the empty-buffer error (raised at run time) named no line."""
    from tempo.api.rl.replay_buffer.replay_buffer import ReplayBuffer

    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds  # noqa: E741
    with ctx:
        buf = ReplayBuffer.make(10, [()], [dtypes.float32])
        buf.insert((RT.random(domain=(i, t)),))
        (s,) = buf.sample((i,))  # MISTAKE
        s.sink_udf(lambda v: None)
    ctx.compile({I: 2, T: 3}).execute()


def attention_window_of_zero_tokens(cfg: ExecutionConfig) -> None:
    """accept6 m20: a window of 0 attended to nothing (no error, a NaN or 0 output)."""
    from tempo.api.nn.multihead_attention import MultiHeadAttention

    ctx, t, T = ctx1(cfg)
    with ctx:
        x = RT.random((8,), domain=(t,))
        MultiHeadAttention(8, 2, t).windowed_forward(x, 0)  # MISTAKE


CASES: list[tuple[Callable[[ExecutionConfig], None], type[Exception], tuple[str, ...]]] = [
    (backward_when_nothing_requires_grad, GradientError,
     ("loss = (w * 2.0).sum()", "requires_grad=True")),
    (optimizer_step_called_twice, errors.DefinitionError,
     ("opt.step()", "already defined", "once")),
    (optimizer_step_after_fixed, errors.DefinitionError, ("layer.fixed()",)),
    (two_optimizers_stepping_one_layer, errors.DefinitionError,
     ("SGD(layer.parameters, lr=0.1).step()", "already defined")),
    (optimizer_given_the_module, errors.TempoError, ("Linear", ".parameters")),
    (adam_with_a_negative_learning_rate, errors.ArgumentError, ("lr=-0.001",)),
    (adam_with_b1_of_one, errors.ArgumentError, ("b1=1.0", "[0.0, 1.0)")),
    (linear_on_integer_token_ids, errors.DTypeError, ("Linear", "int64", "Embedding",
                                                      "ids = RT.const")),
    (linear_with_the_wrong_in_features, errors.ShapeError, ("Linear(4, 2)", "(3,)")),
    (conv_on_integer_pixels, errors.DTypeError, ("Conv2d", "uint8")),
    (one_hot_of_float_classes, errors.DTypeError, ("one_hot", "float32")),
    (float_offset_in_an_index, errors.IndexExprError, ("t - 0.5", "0.5 is not an integer")),
    (index_divided_by_a_symbol, errors.IndexExprError, ("t // T", "not by a constant")),
    (from_symbol_of_an_expression, errors.IndexExprError, ("from_expr",)),
    (categorical_mean, errors.UnsupportedError, ("Categorical has no mean",)),
    (gae_over_tensors_without_the_time_dim, errors.DomainError, ("(b)", "time dimension t")),
    (cat_of_shapes_that_differ, errors.ShapeError, ("(2, 3)", "(2, 4)")),
    (normal_whose_parameters_do_not_broadcast, errors.ShapeError, ("mu", "(3,)", "(4,)")),
    (conv_given_the_wrong_channels, errors.ShapeError, ("2 channels", "takes 3")),
    (clip_norm_of_no_gradients, errors.TempoError, ("at least one gradient",)),
    (lstm_cell_given_h_without_c, errors.TempoError, ("pair (h, c)", "RecurrentTensor")),
    (random_int_with_an_empty_range, errors.ArgumentError, ("low=5", "high=2")),
    (when_given_an_integer, errors.IndexExprError, ("boolean",)),
    (sink_udf_given_a_value, errors.TempoError, ("needs a function", "NoneType")),
    (placeholder_over_a_foreign_symbol, errors.IndexExprError, ("(z)", "(t)")),
    (llama_given_a_token_without_the_time_dim, errors.ShapeError, ("domain ()", "t")),
    (state_dict_key_that_is_missing, errors.TempoError, ("'b'",)),
    (reading_a_point_with_too_few_indices, errors.TempoError, ("(0,)", "(b, t)",
                                                               "x = RT.from_symbol(t)")),
    (sum_over_dims_given_as_a_string, errors.ShapeError, ("'0'",)),
    (sgd_given_a_learning_rate_schedule_tensor, errors.ArgumentError,
     ("lr must be a Python number", "RecurrentTensor")),
    (replay_sampled_with_no_token, errors.TempoError, ("empty replay buffer", "token=")),
    (attention_window_of_zero_tokens, errors.ArgumentError, ("window_size=0",)),
]


@pytest.mark.parametrize("case, cls, words", CASES, ids=[c.__name__ for c, _, _ in CASES])
def test_user_mistake(case: Callable[[ExecutionConfig], None], cls: type[Exception],
                      words: tuple[str, ...], cfg: ExecutionConfig) -> None:
    check_mistake(case, cls, words, cfg)


def test_iterating_a_module_is_an_error_not_a_hang() -> None:
    """`list(module)` fell back to module[0], module[1], ... (Module.__getitem__ re-indexes
    its parameters) and never ended; Sequential iterates over its modules as in torch."""
    from tempo.api.nn import Linear, Relu, Sequential

    ctx, t, T = ctx1(ExecutionConfig.test_cfg())
    with ctx:
        layer = Linear(2, 2)
        with pytest.raises(TypeError, match="parameters"):
            iter(layer)  # (without __iter__, iter() works and list() never returns)
        relu = Relu()
        assert list(Sequential(layer, relu)) == [layer, relu]


def test_from_expr_gives_what_from_symbol_was_asked(cfg: ExecutionConfig) -> None:
    """The fix the from_symbol error names works: T - 1 - t at every t."""
    ctx, t, T = ctx1(cfg)
    seen: list[list[int]] = []
    with ctx:
        RT.from_expr(T - 1 - t)[0:T].sink_udf(lambda v: seen.append(v.tolist()))
    ctx.compile({T: 4}).execute()
    assert seen == [[3, 2, 1, 0]]


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_small_int_indices_select_on_every_backend(backend: str) -> None:
    """`RT.const([1, 3])` is int8 (API §5 implied dtypes): torch's index_select takes only
    int32/int64 and failed at run time; every backend selects the rows numpy does."""
    import dataclasses

    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend)
    ctx, t, T = ctx1(cfg)
    table = np.arange(10, dtype=np.float32).reshape(5, 2)
    seen: list[Any] = []
    with ctx:
        x = RT.const(table)
        x.index(0, RT.const([1, 3])).sink_udf(lambda v: seen.append(np.asarray(v)))
    ctx.compile({T: 1}).execute()
    np.testing.assert_array_equal(seen[0], table[[1, 3]])


def test_embedding_reads_small_int_token_ids() -> None:
    """Embedding on `RT.const([1, 4])` (int8) equals torch's embedding of the same ids."""
    from tempo.api.nn import Embedding

    ctx, t, T = ctx1(ExecutionConfig.test_cfg())
    seen: list[Any] = []
    with ctx:
        emb = Embedding(5, 3)
        emb(RT.const([1, 4])).sink_udf(lambda v: seen.append(v.clone()))
        emb.embed_table.sink_udf(lambda v: seen.append(v.clone()))
    ctx.compile({T: 1}).execute()
    out, table = seen if seen[0].shape == (2, 3) else seen[::-1]
    torch.testing.assert_close(out, torch.nn.functional.embedding(torch.tensor([1, 4]), table))
