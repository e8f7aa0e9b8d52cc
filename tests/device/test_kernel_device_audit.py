"""Every torch kernel of the kernel table (tests/runtime/test_backend_kernels.py), built
on a fake GPU and called at a step, creates nothing off the device and reads nothing on
the host (`device_audit`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from device_audit import audit_torch

from tempo.core.dtype import dtypes
from tempo.runtime.backends.torch import TorchBackend

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from test_backend_kernels import CASES, _as_recorded  # noqa: E402

BACKEND = TorchBackend("fake-gpu")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_torch_kernel_is_device_clean(case: tuple) -> None:
    _, op, inputs, extra = case
    args = [BACKEND.from_numpy(a, dtypes.from_np(a.dtype)) for a in _as_recorded(op, inputs)]
    with audit_torch() as audit:
        kernel = BACKEND.kernel(op)
        with audit.step():
            for _ in range(2):  # a first call may fill caches (made on the device too)
                kernel(*args, *extra)
    assert not audit.findings, audit.report()
