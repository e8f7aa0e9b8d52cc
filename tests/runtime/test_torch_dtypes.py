"""Every Tempo dtype maps to a torch dtype and round-trips through a program."""

from __future__ import annotations

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.dtype import dtypes
from tempo.runtime.backends.torch import TorchBackend


@pytest.mark.parametrize("name", sorted(dtypes.fields()))
def test_every_dtype_maps_and_round_trips(name: str, cfg) -> None:  # type: ignore[no-untyped-def]
    dt = dtypes.fields()[name]
    be = TorchBackend()
    assert be.dtype_name(be.from_numpy(np.zeros(2), dt)) == dt.name
    ctx = TempoContext(cfg, num_dims=0)
    with ctx:
        x = RT.const(np.array([1, 0, 1]).astype(dtypes.to_np(dt)), dtype=dt).ident()
    exe = ctx.compile({})
    exe.execute()
    got = exe.get_spatial_tensor_torch(x.tensor_id)
    assert got.tolist() == [1, 0, 1] or got.tolist() == [True, False, True]
