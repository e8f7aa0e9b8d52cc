"""An index value outside its dimension is an error on every backend, as in torch (API.md:
torch gather / index_add / scatter_add): torch raised, numpy wrapped negative indices
silently, jax gave NaN (or dropped an add, or wrapped -1) -- in eager kernels, compiled
regions and compiled loops alike. The one torch exception is kept everywhere: a 0-d index
selects like `x.select(dim, i)`, so -1 is the last row. jax raises at the end of the run
(it checks flags its kernels leave on the device once per run). Checked against numpy on
the three backends, the error naming the user's line."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import BackendError

BACKENDS = ("torch", "jax", "numpy")
X = np.arange(12, dtype=np.float32).reshape(3, 4)
KINDS = ("select_0d", "select_1d", "gather", "index_add", "scatter_add")


def _build(kind: str, i: RT) -> RT:
    x = RT.const(X)
    if kind == "select_0d":
        return x.index(0, i)
    if kind == "select_1d":
        return x.index(0, i.reshape((1,)))
    if kind == "gather":
        return x.gather(1, i.reshape((1, 1)).expand((3, 1)))
    if kind == "index_add":
        return RT.zeros((3, 4)).index_add(0, i.reshape((1,)), RT.ones((1, 4)))
    return RT.zeros((3, 4)).scatter_add(1, i.reshape((1, 1)).expand((3, 1)), RT.ones((3, 1)))


def _want(kind: str, k: int) -> np.ndarray:
    if kind == "select_0d":
        return X[k]
    if kind == "select_1d":
        return X[[k]]
    if kind == "gather":
        return X[:, [k]]
    z = np.zeros((3, 4), np.float32)
    if kind == "index_add":
        z[k] += 1
    else:
        z[:, k] += 1
    return z


def _run(backend: str, kind: str, k: int, **cfg: Any) -> np.ndarray:
    c = ExecutionConfig(dev="cpu", backend=backend, **cfg)
    ctx = TempoContext(c, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    out: list[np.ndarray] = []
    with ctx:  # a data-dependent index (the compiler cannot see its value)
        i = RT.const(np.array([k, k], dtype=np.int64)).index(0, t)
        _build(kind, i).sink_udf(lambda v: out.append(np.asarray(v)))
    ctx.compile({T: 1}).execute()
    return out[-1]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_in_range_and_a_0d_select_from_the_end(backend: str, kind: str) -> None:
    np.testing.assert_array_equal(_run(backend, kind, 2), _want(kind, 2))
    if kind == "select_0d":  # torch's x.select(0, -1): the last row
        np.testing.assert_array_equal(_run(backend, kind, -1), X[-1])


SIZE = {"select_0d": 3, "select_1d": 3, "index_add": 3, "gather": 4, "scatter_add": 4}
OUTSIDE = [(kind, k) for kind in KINDS for k in (-1, SIZE[kind], 5)
           if not (kind == "select_0d" and k == -1)]


@pytest.mark.parametrize(("kind", "k"), OUTSIDE)
@pytest.mark.parametrize("backend", BACKENDS)
def test_out_of_range_raises(backend: str, kind: str, k: int) -> None:
    here = r"out of (range|bounds).*\n.*test_index_out_of_range.py"
    with pytest.raises(BackendError, match=here):
        _run(backend, kind, k)


def _loop(k: int, **cfg: Any) -> tuple[np.ndarray, Any]:
    """h[t + 1] = h / 2 + X[idx[t]] on jax with compiled loops (one lax.scan)."""
    c = ExecutionConfig(dev="cpu", backend="jax", enable_vectorization=False, **cfg)
    ctx = TempoContext(c, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    out: list[np.ndarray] = []
    with ctx:
        h = RT.placeholder((4,), dtypes.float32, domain=(t,))
        h[0] = RT.zeros((4,))
        i = RT.const(np.array([0, 2, k, 1, 0, 2], dtype=np.int64)).index(0, t)
        h[t + 1] = h * 0.5 + RT.const(X).index(0, i.reshape((1,))).squeeze(0)
        h[0:T].sink_udf(lambda v: out.append(np.asarray(v)))
    exe = ctx.compile({T: 6})
    exe.execute()
    return out[-1], exe


def test_jax_compiled_loop() -> None:
    """In range the loop runs as a scan and equals numpy; out of range (jax gave NaN for
    5 and row 2 for -1) the run raises at its end naming the user's line."""
    got, exe = _loop(1)
    want, h = [], np.zeros(4, np.float32)
    for k in (0, 2, 1, 1, 0, 2):
        want.append(h)
        h = h * 0.5 + X[k]
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-6)
    g = exe.generated.fn.__globals__
    assert any(getattr(v, "calls", 0) for n, v in g.items() if n.startswith("_L"))
    for k in (5, -1):  # (jax checks once per run: the op, not the value)
        with pytest.raises(BackendError, match=r"out of range in the index_select `h\[t \+ 1\]"):
            _loop(k)


def test_jax_names_the_region_whose_index_left_its_dim() -> None:
    """Two equal fused regions share one compiled body (built from the first region's
    members): the error names the second one's line, where the index was out of range."""
    c = ExecutionConfig(dev="cpu", backend="jax")
    ctx = TempoContext(c, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    seen: list[np.ndarray] = []
    with ctx:
        i1 = RT.const(np.array([1, 2], dtype=np.int64)).index(0, t)
        i2 = RT.const(np.array([0, 7], dtype=np.int64)).index(0, t)
        y1 = (RT.const(X).index(0, i1.reshape((1,))) * 2.0).exp()
        y2 = (RT.const(X).index(0, i2.reshape((1,))) * 2.0).exp()
        (y1 + y2).sink_udf(lambda v: seen.append(np.asarray(v)))
    exe = ctx.compile({T: 2})
    with pytest.raises(BackendError, match=r"out of range in the index_select `y2 = "):
        exe.execute()
    assert len(seen) == 2 and np.isnan(seen[1]).all()  # (what jax computed before the check)
