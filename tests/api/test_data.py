"""`tempo.api.data.DataLoader`: minibatches of a torch Dataset over a domain, shuffled per
epoch from the config seed, identical on every backend."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import TensorDataset

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.data import DataLoader
from tempo.core.configs import ExecutionConfig

N, B, I_ = 10, 4, 5  # 2 batches per epoch (2 items dropped), 3 epochs touched
X = torch.arange(N * 3, dtype=torch.float32).reshape(N, 3)
Y = torch.arange(N, dtype=torch.int64) * 10


def _run(backend: str, tmp: Path, seed: int = 7) -> tuple[list, list, list]:
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend, seed=seed,
                              path=str(tmp) + "/")
    loader = DataLoader.from_torch_dataset(TensorDataset(X, Y), batch_size=B)
    ctx = TempoContext(cfg, num_dims=1)
    ((i, I),) = ctx.variables_and_bounds
    xs, ys, sums = [], [], []
    with ctx:
        x, y = loader.sample((i,))
        assert tuple(x.shape) == (B, 3) and tuple(y.shape) == (B,)
        x.sink_udf(lambda v: xs.append(np.array(np.from_dlpack(v))))
        y.sink_udf(lambda v: ys.append(np.array(np.from_dlpack(v))))
        (x.sum(1) * 2.0).sink_udf(lambda v: sums.append(np.array(np.from_dlpack(v))))
    ctx.compile({I: I_}).execute()
    return xs, ys, sums


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_batches_follow_the_seeded_epoch_permutation(backend: str, tmp_path: Path) -> None:
    xs, ys, sums = _run(backend, tmp_path)
    assert len(xs) == I_
    for k in range(I_):
        epoch, b = divmod(k, N // B)
        idx = np.random.default_rng([7, epoch]).permutation(N)[b * B:(b + 1) * B]
        np.testing.assert_array_equal(xs[k], X[idx].numpy(), strict=True)
        np.testing.assert_array_equal(ys[k], Y[idx].numpy())
        np.testing.assert_allclose(sums[k], X[idx].sum(1).numpy() * 2.0)
    epoch0 = np.concatenate(ys[:2])
    assert len(set(epoch0.tolist())) == 2 * B  # no item twice in an epoch


def test_backends_and_seeds(tmp_path: Path) -> None:
    a = _run("torch", tmp_path)[1]
    assert all(np.array_equal(p, q) for p, q in zip(a, _run("numpy", tmp_path)[1]))
    assert not all(np.array_equal(p, q) for p, q in zip(a, _run("torch", tmp_path, seed=8)[1]))


def test_single_tensor_items_and_no_shuffle(tmp_path: Path) -> None:
    class Squares(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return 6

        def __getitem__(self, k: int) -> torch.Tensor:
            return torch.tensor([k * k, k], dtype=torch.int32)

    loader = DataLoader.from_torch_dataset(Squares(), batch_size=3, shuffle=False)
    ctx = TempoContext(dataclasses.replace(ExecutionConfig.test_cfg(), path=str(tmp_path)),
                       num_dims=1)
    ((i, I),) = ctx.variables_and_bounds
    got: list = []
    with ctx:
        x = loader.sample(i)
        assert isinstance(x, RT) and x.dtype.name == "int"
        x.sink_udf(lambda v: got.append(v.clone()))
    ctx.compile({I: 3}).execute()
    want = [torch.tensor([[k * k, k] for k in r], dtype=torch.int32)
            for r in ([0, 1, 2], [3, 4, 5], [0, 1, 2])]
    for g, w in zip(got, want):
        assert torch.equal(g, w)
