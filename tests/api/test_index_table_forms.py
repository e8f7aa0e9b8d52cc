"""API §3.4's indexing table written as a user would, in one program, with every read's
values checked against numpy indexing of the same data. With an odd bound the scheduler
splits the inner loop into runs and decides some of a free's conditions away: a branch of
an `if`/`else` could end up with nothing in it, and the generated code did not compile
(IndentationError 'expected an indented block after else', acceptance r03)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import tempo.core.index_expr as ie
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

A_, B_, C_, D_ = 6, 11, 2, 3
DATA = (np.arange(A_ * B_ * C_ * D_, dtype=np.float32).reshape(A_, B_, C_, D_) / 7.0)

CONFIGS = [(backend, on) for backend in ("torch", "jax", "numpy") for on in (True, False)]
ALL = ("x[0]", "x[0, 1]", "x[:, 1]", "x[:, 5:10]", "x[...]", "x[1, ..., 2]", "x[a, b]",
       "x[a+1, b]", "x[min(a+10, A-1), b]", "x[0:5, b]", "x[0:a+1]")
SUBSETS = [ALL, ("x[0:a+1]", "x[0, 1]"), ("x[0:a+1]", "x[...]", "x[0, 1]"),
           ("x[0:a+1]", "x[0, 1]", "x[a, b]")]
"""The whole table, and rows that alone leave a branch empty (x[0, 1] keeps the point
(0, 1) alive to the end, so the frees of x[0:a+1]'s points differ for b <= 1)."""


def config(backend: str, on: bool) -> ExecutionConfig:
    """The default config, with vectorisation and fusion both on or both off."""
    return dataclasses.replace(ExecutionConfig(dev="cpu", backend=backend),
                               enable_vectorization=on, enable_fusion=on)


def _source(backend: str, a: Any, b: Any) -> RT:
    def point(ts: dict) -> Any:
        v = DATA[ts[a], ts[b]]
        if backend == "torch":
            import torch

            return torch.from_numpy(v.copy())
        if backend == "jax":
            import jax.numpy as jnp

            return jnp.asarray(v)
        return v.copy()

    return RT.source_with_ts_udf(point, (C_, D_), dtypes.float32, domain=(a, b))


@pytest.mark.parametrize("names", SUBSETS, ids=["all", "slice+point", "slice+all+point",
                                                "slice+point+basis"])
@pytest.mark.parametrize(("backend", "on"), CONFIGS)
def test_rows_of_the_index_table_in_one_program(backend: str, on: bool,
                                                names: tuple[str, ...]) -> None:
    ctx = TempoContext(config(backend, on), num_dims=2)
    (a, A), (b, B) = ctx.variables_and_bounds
    got: dict[str, dict[tuple[int, ...], np.ndarray]] = {}
    with ctx:
        x = _source(backend, a, b)
        nxt = RT.placeholder((C_, D_), dtypes.float32, domain=(a, b))
        nxt[a < A - 1] = x[a + 1, b]  # read only where a + 1 exists
        nxt[True] = x[a, b] * 0.0
        rows = {"x[0]": x[0], "x[0, 1]": x[0, 1], "x[:, 1]": x[:, 1], "x[:, 5:10]": x[:, 5:10],
                "x[...]": x[...], "x[1, ..., 2]": x[1, ..., 2], "x[a, b]": x[a, b],
                "x[a+1, b]": nxt, "x[min(a+10, A-1), b]": x[ie.min(a + 10, A - 1), b],
                "x[0:5, b]": x[0:5, b], "x[0:a+1]": x[0:a + 1]}
        for name in names:
            def keep(v: Any, ts: dict, name: str = name) -> None:
                key = tuple(ts[s] for s in (a, b) if s in ts)
                got.setdefault(name, {})[key] = np.asarray(v)

            rows[name].sink_with_ts_udf(keep)
    ctx.compile({A: A_, B: B_}).execute()

    last = A_ - 1
    want: dict[str, dict[tuple[int, ...], np.ndarray]] = {
        "x[0]": {(j,): DATA[0, j] for j in range(B_)},
        "x[0, 1]": {(): DATA[0, 1]},
        "x[:, 1]": {(i,): DATA[i, 1] for i in range(A_)},
        "x[:, 5:10]": {(i,): DATA[i, 5:10] for i in range(A_)},
        "x[...]": {(i, j): DATA[i, j] for i in range(A_) for j in range(B_)},
        "x[1, ..., 2]": {(j,): DATA[1, j, :, 2] for j in range(B_)},
        "x[a, b]": {(i, j): DATA[i, j] for i in range(A_) for j in range(B_)},
        "x[a+1, b]": {(i, j): DATA[i + 1, j] if i < last else DATA[i, j] * 0.0
                      for i in range(A_) for j in range(B_)},
        "x[min(a+10, A-1), b]": {(i, j): DATA[min(i + 10, last), j]
                                 for i in range(A_) for j in range(B_)},
        "x[0:5, b]": {(j,): DATA[0:5, j] for j in range(B_)},
        "x[0:a+1]": {(i, j): DATA[0:i + 1, j] for i in range(A_) for j in range(B_)},
    }
    assert set(got) == set(names)
    for name in names:
        points = want[name]
        assert set(got[name]) == set(points), name
        for key, w in points.items():
            np.testing.assert_array_equal(got[name][key], w, err_msg=f"{name} at {key}")
