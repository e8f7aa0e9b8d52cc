"""Tiled reads of point stores (runtime/block_reads.py) off the CPU assemble their blocks
on the device: the same blocks as the host assembly, with no point read on the host."""

from __future__ import annotations

import numpy as np
import pytest
from jax_audit import audit_jax

from tempo.core.dtype import dtypes
from tempo.core.sdg import TensorId
from tempo.runtime.backends.jax import JaxBackend
from tempo.runtime.backends.torch import TorchBackend
from tempo.runtime.block_reads import PointBlocks
from tempo.runtime.stores import storage_of


@pytest.mark.parametrize("backend", [JaxBackend, TorchBackend])
def test_device_assembly_equals_host_assembly_and_reads_nothing(backend: type) -> None:
    be = backend("fake-gpu")
    points = np.random.default_rng(0).standard_normal((7, 3)).astype(np.float32)
    store: dict = {}

    def reader(stack: object) -> PointBlocks:
        return PointBlocks(store, 0, 3, be.to_numpy, lambda a: be.from_numpy(a, dtypes.float32),
                           TensorId(0, 0), None, storage_of(be.name), stack=stack)

    host, device = reader(None), reader(be.stack)
    with audit_jax(guard=False) as audit:
        for t in range(7):  # a growing read x[0:t+1], as a decoder's history
            store[(t,)] = be.from_numpy(points[t], dtypes.float32)
            with audit.step():
                got = device.read_blocks((), 0, t + 1)
            want = host.read_blocks((), 0, t + 1)
            assert [(s, e) for _, s, e in got] == [(s, e) for _, s, e in want]
            for (g, _, e), (w, _, _) in zip(got, want):
                np.testing.assert_array_equal(be.to_numpy(g)[:e], be.to_numpy(w)[:e])
                np.testing.assert_array_equal(be.to_numpy(g)[e:], 0)
    assert not audit.findings, audit.report()
    assert sorted(device.full[()]) == sorted(host.full[()]) == [0, 1]  # complete blocks kept
