"""A program must use its own context's dimensions and bounds. Symbols compare by name, and
two unnamed contexts both have `d0`/`D0` (two named alike both have `t`/`T`), so the check
that a symbol belongs to the recording context goes by the context that made it
(`Symbol.owner`): a foreign `d0` used to be accepted silently as the recording context's."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn.linear import Linear
from tempo.api.rl.replay_buffer.replay_buffer import ReplayBuffer
from tempo.core import errors
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from mistakes import check_mistake  # noqa: E402


def _cfg() -> ExecutionConfig:
    return ExecutionConfig(dev="cpu", backend="numpy")


def _pair(named: bool) -> tuple[TempoContext, TempoContext, Any, Any]:
    """Two contexts whose one dimension has the same name; the first one's (t, T).
    Taken apart by index, so the unnamed ones keep `d0`/`D0` (no statement names them)."""
    kw: dict[str, Any] = {"dim_names": ("t",)} if named else {}
    first = TempoContext(_cfg(), num_dims=1, **kw)
    second = TempoContext(_cfg(), num_dims=1, **kw)
    t, T = first.variables[0], first.upper_bounds[0]
    assert t == second.variables[0] and T == second.upper_bounds[0]  # equal by name
    return first, second, t, T


def from_symbol_of_another(named: bool) -> None:
    _, second, t, _ = _pair(named)
    with second:
        RT.from_symbol(t)  # MISTAKE


def domain_of_another(named: bool) -> None:
    _, second, t, _ = _pair(named)
    with second:
        RT.placeholder((), dtypes.float32, domain=(t,))  # MISTAKE


def index_of_another(named: bool) -> None:
    _, second, t, _ = _pair(named)
    with second:
        s = second.variables[0]
        x = RT.from_symbol(s)
        x[t + 1]  # MISTAKE


def bound_in_a_shape_of_another(named: bool) -> None:
    _, second, _, T = _pair(named)
    with second:
        s = second.variables[0]
        x = RT.from_symbol(s)
        x[0:T]  # MISTAKE


def module_domain_of_another(named: bool) -> None:
    _, second, t, _ = _pair(named)
    with second:
        Linear(3, 2, domain=(t,))  # MISTAKE


def replay_insert_domain_of_another(named: bool) -> None:
    _, second, t, _ = _pair(named)
    with second:
        buf = ReplayBuffer.make(8, [()], [dtypes.float32])
        buf.insert([RT.ones(())], domain=(t,))  # MISTAKE


def bound_at_compile_of_another(named: bool) -> None:
    _, second, _, T = _pair(named)
    with second:
        RT.from_symbol(second.variables[0]).sink_udf(lambda v: None)
    second.compile({T: 3})  # MISTAKE


CASES: list[tuple[Callable[[bool], None], type[Exception]]] = [
    (from_symbol_of_another, errors.IndexExprError),
    (domain_of_another, errors.IndexExprError),
    (index_of_another, errors.IndexExprError),
    (bound_in_a_shape_of_another, errors.IndexExprError),
    (module_domain_of_another, errors.IndexExprError),
    (replay_insert_domain_of_another, errors.IndexExprError),
    (bound_at_compile_of_another, errors.BoundError),
]


@pytest.mark.parametrize("named", [False, True], ids=["unnamed", "named"])
@pytest.mark.parametrize("case, cls", CASES, ids=[c.__name__ for c, _ in CASES])
def test_a_symbol_of_another_context_raises_at_the_users_line(
        case: Callable[[bool], None], cls: type[Exception], named: bool) -> None:
    check_mistake(case, cls, ("another TempoContext" if cls is not errors.BoundError
                              else "not a bound of this TempoContext",), named)


@pytest.mark.parametrize("named", [False, True], ids=["unnamed", "named"])
def test_each_context_runs_its_own_program(named: bool) -> None:
    """Both contexts, alike, compile and run their own programs (values vs numpy)."""
    first, second, _, _ = _pair(named)
    outs: list[list[float]] = [[], []]
    for k, (ctx, scale) in enumerate(((first, 2.0), (second, 3.0))):
        t, T = ctx.variables[0], ctx.upper_bounds[0]
        with ctx:
            x = RT.from_symbol(t).cast(dtypes.float32) * scale
            y = x[t] + x[0:T].sum()
            y.sink_udf(lambda v, k=k: outs[k].append(float(v)))
        ctx.compile({T: 4}).execute()
    for k, scale in enumerate((2.0, 3.0)):
        xs = np.arange(4, dtype=np.float32) * scale
        np.testing.assert_allclose(outs[k], xs + xs.sum())
