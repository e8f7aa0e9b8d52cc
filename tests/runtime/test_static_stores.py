"""Tracked runs write fresh values into point stores with static charges
(runtime/codegen_static.py): the same results as eager, the same live bytes and peak at
every step as the storage-asking store gives, and a cap below the need still raises
naming the tensor."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoMemoryError
from tempo.runtime import codegen

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from programs import all_passes  # noqa: E402

T = 7
N = 64  # floats per point: 256 B
XS = np.random.default_rng(3).standard_normal((T, N)).astype(np.float32)
W = np.random.default_rng(4).standard_normal((N, N)).astype(np.float32) / 8


def _run(cfg, backend: str, cap: int | None, fused: bool = False):  # noqa: ANN001, ANN202
    cfg = dataclasses.replace(all_passes(cfg) if fused else cfg, backend=backend,
                              device_memory_cap_bytes=cap, executor_debug_mode=cap is not None,
                              enable_gc=True, enable_custom_thunk_launchers=True)
    ctx = TempoContext(cfg, num_dims=1)
    (t, TT), = ctx.variables_and_bounds
    got: list[np.ndarray] = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: XS[ts[t]], (N,), dtypes.float32, domain=(t,))
        h = RT.placeholder((N,), dtypes.float32, domain=(t,))
        y = (h @ RT.const(W)).tanh()  # fresh; read at t and at t-1: a point store
        h[0] = x * 1.0
        h[True] = y[t - 1] * 0.5 + x
        y.sink_udf(lambda v: got.append(np.array(v)))
    exe = ctx.compile({TT: T})
    exe.execute()
    want, hk = [], XS[0]
    for k in range(T):
        hk = XS[0] if k == 0 else want[-1] * 0.5 + XS[k]
        want.append(np.tanh(hk @ W))
    np.testing.assert_allclose(np.stack(got), np.stack(want), rtol=1e-5, atol=1e-5)
    return exe


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("backend", ["torch", "numpy", "jax"])
def test_fresh_values_in_point_stores_are_charged_statically(cfg, backend: str, fused: bool,
                                                             monkeypatch) -> None:
    """(fused: the store's value comes out of a region whose scratch is charged for the
    call: the static charge sits where the store's own would, before that credit)"""
    exe = _run(cfg, backend, 1 << 30, fused)
    src = exe.generated.source
    assert re.search(r"\bds\d+_0\(", src) and re.search(r"if fs\d+_0\(", src), src
    stats, timeline = exe.memory_stats(), exe.memory_timeline()
    assert stats["live_bytes"] == 0
    # the store that asks every value for its storage gives the same bytes at every step
    monkeypatch.setattr(codegen, "static_tensors", lambda *a: set())
    ref = _run(cfg, backend, 1 << 30, fused)
    assert not re.search(r"\bds\d+_0\(", ref.generated.source)
    assert ref.memory_stats()["peak_bytes"] == stats["peak_bytes"]
    assert ref.memory_timeline() == timeline


def test_untracked_runs_use_plain_stores(cfg) -> None:
    assert not re.search(r"\bds\d+_0\(", _run(cfg, "torch", None).generated.source)


def test_a_cap_below_the_need_raises_naming_the_tensor(cfg) -> None:
    with pytest.raises(TempoMemoryError, match="device_memory_cap_bytes=700"):
        _run(cfg, "torch", 700)
