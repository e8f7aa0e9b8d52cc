"""Errors name dimensions as the user's code does. `TempoContext(cfg, num_dims=n)` makes
d0..d{n-1}; the statement that takes the symbols, `(b, B), (t, T) =
ctx.variables_and_bounds` (API.md §1), names them `b`/`B` and `t`/`T` in every message
(and in the schedule), as `dim_names=` does."""

from __future__ import annotations

import re

import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import errors
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

DEFAULT = re.compile(r"\b[dD]\d\b")


def _cfg(**kw: object) -> ExecutionConfig:
    return ExecutionConfig(dev="cpu", backend="numpy", **kw)  # type: ignore[arg-type]


def _no_default_names(exc: pytest.ExceptionInfo[BaseException]) -> str:
    msg = str(exc.value)
    assert not DEFAULT.search(msg), msg
    return msg


def test_a_definition_over_a_larger_domain_names_the_users_dims() -> None:
    ctx = TempoContext(_cfg(), num_dims=2)
    (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        with pytest.raises(errors.DomainError) as info:
            x[t] = RT.from_symbol(b).cast(dtypes.float32) + RT.from_symbol(t)
    msg = _no_default_names(info)
    assert "has domain (t), but" in msg and "larger domain (b, t)" in msg


def test_a_stop_tensor_without_its_dimension_names_it() -> None:
    ctx = TempoContext(_cfg(), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        x[0] = RT.const(0.0)
        x[t + 1] = x + 1.0
        x.sink_udf(lambda v: None)
        never = RT.const(True)
    with pytest.raises(errors.BoundError) as info:
        ctx.compile({T: (5, never)})
    assert "must have t in its domain" in _no_default_names(info)


def test_a_stop_never_true_names_the_dimension_and_its_bound() -> None:
    ctx = TempoContext(_cfg(default_dim_upper_bound_size=4), num_dims=1)
    t, T = ctx.variables_and_bounds[0]
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        x[0] = RT.const(0.0)
        x[t + 1] = x + 1.0
        x.sink_udf(lambda v: None)
        done = x > 100.0
    exe = ctx.compile({T: done})
    with pytest.raises(errors.BoundError) as info:
        exe.execute()
    msg = _no_default_names(info)
    assert "dimension t reached its maximum of 4 points" in msg and "`{T: done}`" in msg


def test_variables_and_upper_bounds_taken_apart_name_them_too() -> None:
    ctx = TempoContext(_cfg(), num_dims=2)
    env, time = ctx.variables
    E, S = ctx.upper_bounds
    assert (str(env), str(time), str(E), str(S)) == ("env", "time", "ENV", "TIME")
    with ctx:
        x = RT.from_symbol(time)
        x[time + 1].sink_udf(lambda v: None)
    with pytest.raises(errors.IndexExprError) as info:
        ctx.compile({E: 2, S: 4})
    assert "past the end TIME - 1 of time" in _no_default_names(info)


def test_the_schedule_prints_the_users_names() -> None:
    ctx = TempoContext(_cfg(), num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        x[0] = RT.const(0.0)
        x[t + 1] = x + 1.0
        got: list = []
        x.sink_udf(lambda v: got.append(float(v)))
    exe = ctx.compile({T: 3})
    exe.execute()
    assert got == [0.0, 1.0, 2.0]
    assert "for t in range" in exe.schedule_text() and not DEFAULT.search(exe.schedule_text())


def test_names_that_are_not_plain_twins_keep_the_defaults() -> None:
    """`i, N` are not a variable and its bound (`N` is not `I`), a name the generated code
    binds would shadow it, and a stored tuple names nothing: d0 stays."""
    ctx = TempoContext(_cfg(), num_dims=1)
    ((i, N),) = ctx.variables_and_bounds
    assert (str(i), str(N)) == ("d0", "D0")
    ctx = TempoContext(_cfg(), num_dims=1)
    ((k0, K0),) = ctx.variables_and_bounds
    assert str(k0) == "d0"
    ctx = TempoContext(_cfg(), num_dims=1)
    pairs = ctx.variables_and_bounds
    ((t, T),) = ctx.variables_and_bounds  # the symbols were handed out already
    assert str(pairs[0][0]) == str(t) == "d0"
    ctx = TempoContext(_cfg(), num_dims=1, dim_names=("time",))
    ((t, T),) = ctx.variables_and_bounds  # the user's dim_names win
    assert str(t) == "time"


def test_warnings_and_the_schedule_name_dims_bound_through_a_variable() -> None:
    """Symbols bound through `vb` keep their default names (no statement to parse); the
    domain warning and schedule_text() print the user's names for them, as errors do."""
    ctx = TempoContext(_cfg(), num_dims=2)
    vb = ctx.variables_and_bounds
    (b, B), (t, T) = vb
    assert (str(b), str(t)) == ("d0", "d1")
    with ctx:
        with pytest.warns(UserWarning) as got:
            RT.zeros((), domain=(t,))
            RT.const(1.0, domain=(b, t))
        x = RT.from_symbol(t).cast(dtypes.float32) * 2.0
        y = x[0:T].sum() + RT.from_symbol(b).cast(dtypes.float32)
        seen: list[float] = []
        y.sink_udf(lambda v: seen.append(float(v)))
    texts = [str(w.message) for w in got]
    assert "zeros() ignores domain=(t,)" in texts[0], texts
    assert "const() ignores domain=(b, t)" in texts[1], texts
    assert not any(DEFAULT.search(m) for m in texts), texts
    exe = ctx.compile({B: 2, T: 3})
    text = exe.schedule_text()
    assert "for b in range" in text and "T = 3" in text and not DEFAULT.search(text), text
    exe.execute()
    assert seen == [0.0 + 2.0 + 4.0 + k for k in range(2)]  # sum of 2t over t < 3, plus b
