"""The call-overhead bench's twin (`tempo.bench.call_overhead.leaf_twin`): every leaf
kernel is counted once per call, a folded clamp as one leaf (it was called outside the
stubs and counted nowhere), and once armed no leaf runs
(nor counts: the counts come from the run before)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from programs import all_passes

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.bench.call_overhead import leaf_twin
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.runtime import regions

T_ = 4
DATA = np.random.default_rng(3).standard_normal((T_, 8)).astype(np.float32)


def _make(got: list[np.ndarray], path: str) -> Callable[[], Any]:
    def make() -> Any:
        cfg = dataclasses.replace(all_passes(dataclasses.replace(
            ExecutionConfig.test_cfg(), path=path)), backend="torch")
        ctx = TempoContext(cfg, num_dims=1)
        ((t, T),) = ctx.variables_and_bounds
        data = torch.from_numpy(DATA)
        with ctx:
            x = RT.source_with_ts_udf(lambda ts: data[ts[t]] * 1.0, (8,), dtypes.float32,
                                      domain=(t,))
            ((x * 1.5).clip(-1.0, 0.5) * 3.0).sink_udf(
                lambda v: got.append(np.asarray(v).copy()))
        return ctx.compile({T: T_})
    return make


def _count(tmp_path: Any, arm: bool) -> tuple[int, list[np.ndarray]]:
    got: list[np.ndarray] = []
    state: list[int] = [0, 0, 0, 0]
    armed: list[Callable[[], None]] = []
    twin = leaf_twin(_make(got, str(tmp_path) + "/"), state, armed)
    twin.execute()
    if arm:
        for a in armed:
            a()
    state[1] = 0
    got.clear()
    twin.reset()
    twin.execute()
    return state[1], got


def test_the_twin_counts_a_folded_clamp_as_one_leaf(tmp_path: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    clamps = [0]
    real = regions.fold_kernel

    def fold_kernel(kind: str, compiled: bool = False) -> Any:
        kernel = real(kind, compiled)
        if kind.removesuffix("_").endswith("clamp"):  # clamp, or in place: in_place:clamp_
            def clamp(*a: Any) -> Any:
                clamps[0] += 1
                return kernel(*a)
            return clamp
        return kernel  # (the `* 3.0` after the clip runs in place: one leaf either way)

    monkeypatch.setattr(regions, "fold_kernel", fold_kernel)
    folded, got = _count(tmp_path, arm=False)
    want = np.clip(DATA * 1.5, -1.0, 0.5) * 3.0
    np.testing.assert_allclose(np.stack(got), want, rtol=1e-6)  # unarmed: real kernels
    monkeypatch.setattr(regions, "torch_folds", lambda op, cpu=True: {})
    unfolded, _ = _count(tmp_path, arm=False)
    # per call of the folding region, maximum + minimum (two leaves) became one clamp
    assert clamps[0] > 0 and folded == unfolded - clamps[0] // 2  # (2 runs counted)


def test_an_armed_twin_stubs_every_leaf(tmp_path: Any) -> None:
    n, got = _count(tmp_path, arm=True)
    assert n == 0 < _count(tmp_path, arm=False)[0]  # armed stubs count nothing
    assert got == []  # the sink UDF is a leaf too: stubbed, it never runs
