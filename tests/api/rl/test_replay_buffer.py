"""`ReplayBuffer` (API.md §6.4): inserted tuples come back whole, sampling is uniform with
replacement over what was inserted before the token, FIFO beyond max_size, and the
registry accepts other storages."""

from __future__ import annotations

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.rl.replay_buffer.replay_buffer import ReplayBuffer
from tempo.api.rl.replay_buffer.storage import DequeStorage, ReplayBufferRegistry
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import ShapeError, TempoError


def _run(K: int, max_size: int, S: int, n: int | None, storage: str = "deque") -> list:
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="torch", path="", seed=3),
                       num_dims=2)
    (k, Kb), (s, Sb) = ctx.variables_and_bounds
    out: list = []
    with ctx:
        buf = ReplayBuffer.make(max_size, [(2,), ()], [dtypes.float32, dtypes.int64],
                                storage_type=storage)
        x = RT.source_with_ts_udf(lambda ts: np.array([ts[k], -ts[k]], np.float32), (2,),
                                  dtypes.float32, domain=(k,))
        y = RT.source_with_ts_udf(lambda ts: np.int64(ts[k] * 10), (), dtypes.int64,
                                  domain=(k,))
        token = buf.insert((x, y))
        xs, ys = buf.sample((s,), token=token[0:Kb], num_samples=n)
        RT.sink_many_udf([xs[0:Sb], ys[0:Sb]], lambda v: out.append([np.asarray(a) for a in v]))
    ctx.compile({Kb: K, Sb: S}).execute()
    return out[0]


def test_samples_are_whole_inserted_tuples_uniformly_with_replacement() -> None:
    K, S = 10, 4000
    xs, ys = _run(K, 100, S, None)
    assert xs.shape == (S, 2) and ys.shape == (S,)
    np.testing.assert_array_equal(xs[:, 0] * 10, ys)  # items of one sample: one tuple
    np.testing.assert_array_equal(xs[:, 1], -xs[:, 0])
    counts = np.bincount(ys // 10, minlength=K)
    assert counts.sum() == S and (counts > 0).all()
    chi2 = ((counts - S / K) ** 2 / (S / K)).sum()
    assert chi2 < 27.9  # chi-square, 9 dof, p = 0.001
    assert len(np.unique(ys)) == K  # with replacement, every value seen


def test_fifo_beyond_max_size_and_batched_samples() -> None:
    xs, ys = _run(12, 5, 50, 16)
    assert xs.shape == (50, 16, 2) and ys.shape == (50, 16)
    assert set(np.unique(ys // 10)) == {7, 8, 9, 10, 11}  # the last 5 inserted
    np.testing.assert_array_equal(xs[..., 0] * 10, ys)


def test_registry_and_errors() -> None:
    calls: list = []

    class Counting(DequeStorage):
        def insert(self, items):  # type: ignore[no-untyped-def]
            calls.append(1)
            super().insert(items)

    ReplayBufferRegistry.register_replay_buffer("counting", Counting)
    _run(4, 10, 3, None, storage="counting")
    assert len(calls) == 4
    ctx = TempoContext(ExecutionConfig(dev="cpu", backend="torch", path=""), num_dims=1)
    with ctx:
        with pytest.raises(TempoError, match="no replay buffer storage"):
            ReplayBuffer.make(3, [()], [dtypes.float32], storage_type="nope")
        buf = ReplayBuffer.make(3, [(2,)], [dtypes.float32])
        with pytest.raises(ShapeError, match="shape"):
            buf.insert((RT.zeros((3,)),))
