"""Innermost Python loops are emitted as runs of iterations with their conditions decided
(`loops_split`): the first iteration of a recurrence and the last one's frees are peeled,
guards that name an enclosing counter keep only what the run leaves open, and invariant
prefixes of deferred block writes are bound before the loop. Results equal numpy."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.dtype import dtypes
from tempo.core.index_expr import PY_GLOBALS
from tempo.runtime.loops_split import residual, split_runs
from tempo.schedule.tree import Loop, Seq

ENV = {**PY_GLOBALS, "D1": 64}


def test_a_loop_splits_into_first_middle_and_last_runs() -> None:
    loop = Loop("d1", "0", "63 + 1", 1, Seq([]))
    runs = split_runs(loop, ["(d1 == 0)", "((d0 == 2) and (d1 == 63))", "(d1 <= (D1 - 2))"],
                      ENV)
    assert runs == [
        (range(0, 1), {"(d1 == 0)": True, "((d0 == 2) and (d1 == 63))": False,
                       "(d1 <= (D1 - 2))": True}),
        (range(1, 63), {"(d1 == 0)": False, "((d0 == 2) and (d1 == 63))": False,
                        "(d1 <= (D1 - 2))": True}),
        (range(63, 64), {"(d1 == 0)": False, "((d0 == 2) and (d1 == 63))": "d0 == 2",
                         "(d1 <= (D1 - 2))": False})]


def test_a_backward_loop_splits_in_its_order() -> None:
    runs = split_runs(Loop("t", "D1 - 1", "-1", -1, Seq([])), ["(t == (D1 - 1))"], ENV)
    assert runs is not None and [list(r) for r, _ in runs] == [[63], list(range(62, -1, -1))]


def test_loops_that_stay_whole() -> None:
    conds = ["(d1 == 0)", "(d1 == 5)", "(d1 == 9)"]  # 6 runs
    assert split_runs(Loop("d1", "0", "10", 1, Seq([])), conds, ENV) is None
    # a range an enclosing counter gives, a bound unknown, nothing decided
    assert split_runs(Loop("d1", "0", "d0 + 1", 1, Seq([])), ["(d1 == 0)"], ENV) is None
    assert split_runs(Loop("d1", "0", "T", 1, Seq([])), ["(d1 == 0)"], ENV) is None
    assert split_runs(Loop("d1", "0", "10", 1, Seq([])), ["(d0 == 1)"], ENV) is None


def test_residual_keeps_what_the_run_leaves_open() -> None:
    c = "(((d0 == 2) and (d1 <= 62)) or ((d0 == 2) and (d1 == 63)))"
    assert residual(c, ENV, "d1", list(range(0, 63))) == "d0 == 2"
    assert residual(c, ENV, "d1", [63]) == "d0 == 2"
    assert residual(c, ENV, "d1", list(range(0, 64))) is None  # d1 <= 62 changes
    assert residual("((d0 == 2) or (d1 == 3))", ENV, "d1", [3]) is None  # all decided
    assert residual("((d0 == 2) and (d1 == d0))", ENV, "d1", [3]) is None  # none


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_split_recurrence_equals_numpy(cfg, backend: str) -> None:  # noqa: ANN001
    """h[0] = x[0], h[t] = 0.5 h[t-1] + x[t] over (i, t), summed over t per i: the t loop
    is emitted as its first iteration and the rest, with no test of t == 0 in the loop."""
    I_, T_ = 3, 6
    data = np.random.default_rng(0).standard_normal((I_, T_, 4)).astype(np.float32)
    cfg = dataclasses.replace(cfg, backend=backend, enable_gc=True,
                              enable_custom_thunk_launchers=True, executor_debug_mode=False)
    ctx = TempoContext(cfg, num_dims=2)
    (i, II), (t, TT) = ctx.variables_and_bounds
    got: list[np.ndarray] = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[i], ts[t]], (4,), dtypes.float32,
                                  domain=(i, t))
        h = RT.placeholder((4,), dtypes.float32, domain=(i, t))
        h[i, 0] = x
        h[True] = h[i, t - 1] * 0.5 + x
        h[i, 0:TT].sum(0).sink_udf(lambda v: got.append(np.asarray(v).copy()))
    exe = ctx.compile({II: I_, TT: T_})
    exe.execute()
    want = np.zeros((I_, 4), np.float32)
    for a in range(I_):
        acc = np.zeros(4, np.float32)
        for b in range(T_):
            acc = data[a, b] if b == 0 else acc * 0.5 + data[a, b]
            want[a] += acc
    np.testing.assert_allclose(np.stack(got), want, rtol=1e-5, atol=1e-5)
    src = exe.generated.source
    loops = re.findall(r"\n( +)for (\w+) in range\(1, \d+\):\n((?:\1 .*\n)+)", src)
    assert loops, src
    for _, counter, body in loops:
        assert f"({counter} == 0)" not in body, src
