"""Device names per backend (API §4.3, §7 fix 12; `runtime/backends/devices.py`): "cpu",
"gpu"/"cuda" falling back to the CPU with one warning on a machine without a GPU, a GPU
index this machine lacks or several GPUs named at the user's line, numpy refusing GPUs,
"fake-gpu" taking the GPU code paths on the CPU."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import ConfigError, TempoError, UnsupportedError
from tempo.runtime.backends import devices
from tempo.runtime.backends.devices import Placement, place
from tempo.runtime.backends.jax import JaxBackend
from tempo.runtime.backends.numpy import NumpyBackend
from tempo.runtime.backends.torch import TorchBackend


@pytest.mark.parametrize(("dev", "gpus", "want"), [
    ("cpu", 0, Placement(None, True)), ("cpu", 2, Placement(None, True)),
    ("gpu", 1, Placement(0, False)), ("cuda", 1, Placement(0, False)),
    ("gpu:1", 2, Placement(1, False)), ("cuda:1", 4, Placement(1, False)),
    ("fake-gpu", 0, Placement(None, False)), ("fake-cuda", 3, Placement(None, False)),
])
@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_placement(dev: str, gpus: int, want: Placement, backend: str) -> None:
    assert place(dev, backend, gpus) == want


def test_gpu_without_one_runs_on_the_cpu_and_warns_once(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.setattr(devices, "_WARNED", set())
    with pytest.warns(UserWarning, match="sees no GPU.*running on the CPU"):
        assert place("gpu", "torch", 0) == Placement(None, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert place("gpu", "torch", 0) == Placement(None, True)  # once per process


@pytest.mark.parametrize(("dev", "gpus", "err", "match"), [
    ("gpu:1", 0, ConfigError, "this machine has no GPU"),
    ("gpu:2", 2, ConfigError, r"2 GPUs \(gpu:0-1\)"),
    ("gpu:1", 1, ConfigError, r"1 GPU \(gpu:0\)"),
    ("gpu:0,1", 2, UnsupportedError, "one device"),
    ("gpu:0-2", 0, UnsupportedError, "one device"),
])
def test_unavailable_or_several_gpus_raise(dev: str, gpus: int, err: type, match: str) -> None:
    with pytest.raises(err, match=match):
        place(dev, "torch", gpus)


@pytest.mark.parametrize("dev", ["gpu:1", "cuda:0,1", "fake-gpu"])
def test_numpy_refuses_gpus(dev: str) -> None:
    with pytest.raises(UnsupportedError, match="numpy backend runs on the CPU only"):
        NumpyBackend(dev)


def test_backends_map_cpu_and_fake_gpu() -> None:
    for dev, shortcuts in (("cpu", True), ("fake-gpu", False)):
        tb, jb = TorchBackend(dev), JaxBackend(dev)
        assert tb.device == torch.device("cpu") and jb.device.platform == "cpu"
        assert tb.on_cpu is jb.on_cpu is shortcuts
    assert NumpyBackend("cpu").on_cpu


def _compile(dev: str, backend: str) -> torch.Tensor:
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), dev=dev, backend=backend)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        x = RT.placeholder((2,), domain=(t,))
        x[0] = RT.ones((2,))
        x[t + 1] = x * 2.0
    exe = ctx.compile({T: 3})
    exe.execute()
    return exe.get_spatial_tensor_torch(x.tensor_id, (slice(0, 3),))


@pytest.mark.parametrize(("backend", "dev", "err"), [
    ("torch", "gpu:3", ConfigError), ("jax", "cuda:3", ConfigError),
    ("torch", "gpu:0,1", UnsupportedError), ("numpy", "gpu:1", UnsupportedError),
])
def test_a_device_that_cannot_be_had_names_the_compile_line(backend: str, dev: str,
                                                           err: type) -> None:
    if torch.cuda.device_count() > 3:
        pytest.skip("this machine has a gpu:3")
    with pytest.raises(err) as info:
        _compile(dev, backend)
    assert isinstance(info.value, TempoError)
    assert "test_devices.py" in str(info.value) and "ctx.compile" in str(info.value)
    assert dev in str(info.value)


def test_a_device_error_names_the_compile_line_whatever_the_stack(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend is made at compile from the config (before any pass), and its device
    error is the compile call's: even if the stack walk found another line (in the full
    suite it once named the last recorded op), the error names `ctx.compile`."""
    monkeypatch.setattr(devices, "user_site", lambda: "elsewhere.py:1: x = y")
    with pytest.raises(ConfigError) as info:
        _compile("gpu:7", "torch")
    assert "ctx.compile" in str(info.value) and "elsewhere.py" not in str(info.value)


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_fake_gpu_programs_run(backend: str) -> None:
    want = torch.tensor([[1.0, 1.0], [2.0, 2.0], [4.0, 4.0]])
    torch.testing.assert_close(_compile("fake-gpu", backend), want)


@pytest.mark.parametrize("dev", ["gpu", "cuda", "gpu:0"])
def test_numpy_runs_the_default_gpu_config_on_the_cpu(dev: str) -> None:
    """API §4.3: the config's default dev is "gpu", and §7.12: a GPU request the machine
    cannot serve runs on the CPU with a warning; numpy never has a GPU, so a program with
    the default config must run there unchanged (it was refused)."""
    backend = NumpyBackend(dev)
    assert backend.on_cpu
    got = _compile(dev, "numpy")
    np.testing.assert_allclose(np.asarray(got), [[1, 1], [2, 2], [4, 4]])
