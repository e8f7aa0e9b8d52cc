"""An index built from symbols that runs past its dim (`c.index(0, t)` with 3 rows and
T = 5) is a ShapeError at compile, at the user's line, on every backend: torch and numpy
failed at run time, and jax (its jitted `take` fills out-of-range reads with NaN) silently
returned [2, 4, 6, nan, nan] (acceptance accept5a, idx.py). An index that only runs where
it is in range (a branch `y[t < 3] = c.index(0, t)`) still compiles and runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import ShapeError

BACKENDS = ("torch", "jax", "numpy")
ROWS = np.arange(3, dtype=np.float32) + 1
T_ = 5


def _run(backend: str, vec: bool, build: Callable[[Any, Any], RT], n: int = T_) -> np.ndarray:
    cfg = ExecutionConfig(dev="cpu", backend=backend, enable_vectorization=vec,
                          enable_fusion=vec)
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    out: list[np.ndarray] = []
    with ctx:
        build(t, T)[0:T].sink_udf(lambda v: out.append(np.asarray(v).copy()))
    ctx.compile({T: n}).execute()
    return out[-1]


@pytest.mark.parametrize("vec", [False, True], ids=["loop", "vec"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_index_past_dim_raises_at_compile(backend: str, vec: bool) -> None:
    def build(t: Any, T: Any) -> RT:
        return RT.const(ROWS).index(0, t) * 2.0

    with pytest.raises(ShapeError) as info:
        _run(backend, vec, build)
    msg = str(info.value)
    assert "indexes dim 0 of size 3 with t, which reaches 3 at t = 3" in msg, msg
    assert "T = 5" in msg and "RT.const(ROWS).index(0, t)" in msg, msg
    assert "test_index_range.py" in msg, msg


@pytest.mark.parametrize("vec", [False, True], ids=["loop", "vec"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_shifted_index_past_dim_raises(backend: str, vec: bool) -> None:
    """`t + 1` over T rows reaches T at the last point only."""
    rows = np.arange(T_, dtype=np.float32)

    def build(t: Any, T: Any) -> RT:
        return RT.const(rows).index(0, t + 1)

    with pytest.raises(ShapeError, match=r"of size 5 with t \+ 1, which reaches 5 at t = 4"):
        _run(backend, vec, build)


@pytest.mark.parametrize("vec", [False, True], ids=["loop", "vec"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_branch_guarded_index_runs(backend: str, vec: bool) -> None:
    """The index runs only at t < 3, where it is in range: not refused, values as numpy."""
    def build(t: Any, T: Any) -> RT:
        y = RT.placeholder((), domain=(t,))
        y[t < 3] = RT.const(ROWS).index(0, t) * 2.0
        y[True] = y[t - 1] + 10.0
        return y

    ref = np.empty(T_, dtype=np.float32)
    for s in range(T_):
        ref[s] = ROWS[s] * 2.0 if s < 3 else ref[s - 1] + 10.0
    np.testing.assert_allclose(_run(backend, vec, build), ref)


@pytest.mark.parametrize("vec", [False, True], ids=["loop", "vec"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_in_range_index_unaffected(backend: str, vec: bool) -> None:
    rows = np.arange(T_, dtype=np.float32) * 3 + 1

    def build(t: Any, T: Any) -> RT:
        return RT.const(rows).index(0, T - 1 - t)

    np.testing.assert_allclose(_run(backend, vec, build), rows[::-1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_unused_index_not_refused(backend: str) -> None:
    """An out-of-range index nothing reads is removed as dead code and never runs."""
    rows = np.arange(T_, dtype=np.float32) + 1

    def build(t: Any, T: Any) -> RT:
        RT.const(ROWS).index(0, t)  # unused: 3 rows, T = 5
        return RT.const(rows).index(0, t) * 2.0

    np.testing.assert_allclose(_run(backend, True, build), rows * 2.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_negative_index_past_start_raises(backend: str) -> None:
    """`t - 4` over 3 rows reaches -4 at t = 0."""
    def build(t: Any, T: Any) -> RT:
        return RT.const(ROWS).index(0, t - 4)

    with pytest.raises(ShapeError, match=r"with t - 4, which reaches -4 at t = 0"):
        _run(backend, False, build)


@pytest.mark.parametrize("vec", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_negative_index_does_not_wrap(backend: str, vec: bool) -> None:
    """`index(0, t - 1)` at t = 0 is -1: numpy, jax and a looped torch read the last row,
    a vectorised torch (and any torch index on a GPU) raised at run time. One rule on every
    path: a ShapeError at compile; clamped (`ie.max(t - 1, 0)`) it runs."""
    import tempo.core.index_expr as ie

    rows = np.arange(5, dtype=np.float32) + 1

    def build(t: Any, T: Any) -> RT:
        return RT.const(rows).index(0, t - 1) * 2.0

    with pytest.raises(ShapeError, match=r"with t - 1, which reaches -1 at t = 0"):
        _run(backend, vec, build)

    def clamped(t: Any, T: Any) -> RT:
        return RT.const(rows).index(0, ie.max(t - 1, 0)) * 2.0

    np.testing.assert_allclose(_run(backend, vec, clamped), [2.0, 2.0, 4.0, 6.0, 8.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_constant_ids_past_the_table_raise(backend: str) -> None:
    """accept6 m16: an Embedding given constant ids [1, 7] of a 4-row table. torch and numpy
    failed at run time; jax returned a NaN row for id 7 without a word."""
    from tempo.api.nn import Embedding
    from tempo.core.dtype import dtypes

    table = np.arange(12, dtype=np.float32).reshape(4, 3)

    def build(ids: list[int]) -> Callable[[Any, Any], RT]:
        def f(t: Any, T: Any) -> RT:
            emb = Embedding(4, 3, w_init_fun=lambda shape, dtype, domain: RT.const(table))
            return emb(RT.const(np.array(ids), dtype=dtypes.int64)) * RT.from_symbol(t)
        return f

    with pytest.raises(ShapeError, match=r"constant indices \[1, 7\].*0\.\.3") as info:
        _run(backend, True, build([1, 7]), n=2)
    assert "test_index_range.py" in str(info.value)
    got = _run(backend, True, build([3, 0, 3]), n=2)  # in range: values as numpy
    np.testing.assert_allclose(got, table[[3, 0, 3]][None] * np.arange(2)[:, None, None])
