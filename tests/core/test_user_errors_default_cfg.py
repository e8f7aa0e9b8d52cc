"""User mistakes under the default pipeline (vectorisation, fusion, grouping on), where the
ops that finally fail are often made by passes: the error must still name the user's line
(marked `# MISTAKE`) in the user's words, as under the test config (test_user_errors.py)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn.rnn import LSTMCell
from tempo.core import errors
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mistakes import check_mistake  # noqa: E402


def ctx2(cfg: ExecutionConfig) -> tuple[TempoContext, Any, Any, Any, Any]:
    ctx = TempoContext(cfg, num_dims=2)
    ((b, B), (t, T)) = ctx.variables_and_bounds
    return ctx, b, B, t, T


def window_mean_before_the_start(cfg: ExecutionConfig) -> None:
    ctx, b, B, t, T = ctx2(cfg)
    with ctx:
        x = RT.random((3,), domain=(b, t))
        y = x[b, t - 2:t + 1].mean(0)  # MISTAKE
        y[0:B, 0:T].sink_udf(lambda v: None)
    ctx.compile({B: 2, T: 5})


def window_sum_past_the_end(cfg: ExecutionConfig) -> None:
    ctx, b, B, t, T = ctx2(cfg)
    with ctx:
        x = RT.random((3,), domain=(b, t))
        y = x[b, t:t + 3].sum(0)  # MISTAKE
        y[0:B, 0:T].sink_udf(lambda v: None)
    ctx.compile({B: 2, T: 5})


def lstm_state_pair_into_one_placeholder(cfg: ExecutionConfig) -> None:
    ctx, b, B, t, T = ctx2(cfg)
    with ctx:
        cell = LSTMCell(3, 4)
        x = RT.random((3,), domain=(b, t))
        h = RT.placeholder((4,), dtypes.float32, domain=(b, t))
        c = RT.placeholder((4,), dtypes.float32, domain=(b, t))
        h[b, 0] = RT.zeros((4,))
        h[b, t + 1] = cell(x, (h, c))  # MISTAKE


def base_case_on_the_wrong_dim(cfg: ExecutionConfig) -> None:
    ctx, b, B, t, T = ctx2(cfg)
    with ctx:
        h = RT.placeholder((2,), dtypes.float32, domain=(b, t))
        h[0] = RT.zeros((2,))  # meant t == 0: this is b == 0
        h[b, t + 1] = h * 0.5 + 1.0  # MISTAKE
        h[0:B, 0:T].sink_udf(lambda v: None)
    ctx.compile({B: 2, T: 3})


def time_index_on_the_batch_dim(cfg: ExecutionConfig) -> None:
    ctx, b, B, t, T = ctx2(cfg)
    with ctx:
        x = RT.random((3,), domain=(b, t))
        y = x[t - 1] + x  # MISTAKE
        y[0:B, 0:T].sink_udf(lambda v: None)
    ctx.compile({B: 2, T: 5})


def const_of_a_list_of_tensors(cfg: ExecutionConfig) -> None:
    ctx, b, B, t, T = ctx2(cfg)
    with ctx:
        x = RT.random((3,), domain=(b, t))
        RT.const([x, x])  # MISTAKE


CASES: list[tuple[Callable[[ExecutionConfig], None], type[Exception], tuple[str, ...]]] = [
    (window_mean_before_the_start, errors.IndexExprError,
     ("before the start 0 of t", "ie.max(t - 2, 0)")),
    (window_sum_past_the_end, errors.IndexExprError, ("past the end T - 1 of t",)),
    (lstm_state_pair_into_one_placeholder, errors.DefinitionError, ("tuple of 2", "unpack")),
    (const_of_a_list_of_tensors, errors.TempoError, ("RT.stack",)),
    # the first index addresses b: say so (the clamp alone is the wrong advice)
    (time_index_on_the_batch_dim, errors.IndexExprError,
     ("index position 1 addresses b", "domain (b, t)")),
    # vectorised over b, the read at t - 1 looked like a missing clamp (no b, no base case)
    (base_case_on_the_wrong_dim, errors.IndexExprError,
     ("t = 0 and b >= 1", "b = 1, t = 0", "define its base case")),
]


@pytest.mark.parametrize("backend", ["torch", "numpy"])
@pytest.mark.parametrize("case, cls, words", CASES, ids=[c.__name__ for c, _, _ in CASES])
def test_user_mistake_under_the_default_pipeline(
        case: Callable[[ExecutionConfig], None], cls: type[Exception], words: tuple[str, ...],
        backend: str, tmp_path: Path) -> None:
    cfg = dataclasses.replace(ExecutionConfig(dev="cpu", backend=backend),
                              path=str(tmp_path) + "/")
    msg = check_mistake(case, cls, words, cfg)
    assert "unknown line" not in msg and "internal" not in msg and "region" not in msg, msg
