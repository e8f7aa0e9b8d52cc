"""Device strings (API §4.3) and backend names / registry (`tempo.core.dl_backend`)."""

from __future__ import annotations

import pytest

from tempo.core.device import DeviceGroup, device
from tempo.core.dl_backend import DLBackend, DLBackendName
from tempo.core.errors import ConfigError


@pytest.mark.parametrize("spec,kind,idx", [
    ("cpu", "cpu", (0,)), ("CPU", "cpu", (0,)), ("gpu", "gpu", (0,)), ("cuda", "gpu", (0,)),
    ("gpu:0", "gpu", (0,)), ("gpu:1", "gpu", (1,)), ("gpu:0,1", "gpu", (0, 1)),
    ("gpu:0-2", "gpu", (0, 1, 2)), ("cuda:0,2-3", "gpu", (0, 2, 3)),
    ("fake-gpu", "fake_gpu", (0,)), ("fake-cuda", "fake_gpu", (0,)),
    ("fake-gpu:1", "fake_gpu", (1,)),
])
def test_device_parsing(spec: str, kind: str, idx: tuple[int, ...]) -> None:
    d = device.from_(spec)
    assert (d.kind, d.indices) == (kind, idx)
    assert device.from_(str(d)) == d  # printing round-trips


def test_device_constants() -> None:
    assert device.from_("cpu") == device.cpu and device.cpu.is_cpu
    assert device.from_("cuda") == device.gpu and device.gpu.is_gpu
    assert device.from_("fake-gpu") == device.fake_gpu and device.fake_gpu.is_fake_gpu
    assert device.from_(device.gpu) is device.gpu
    assert isinstance(device.gpu, DeviceGroup)


@pytest.mark.parametrize("spec", ["tpu", "", "gpu:", "gpu:a", "gpu:2-0", "gpu:0,0", "cpu:1",
                                  "gpu:-1", "metal"])
def test_bad_devices_raise(spec: str) -> None:
    with pytest.raises(ConfigError):
        device.from_(spec)


def test_bad_device_type_raises() -> None:
    with pytest.raises(ConfigError):
        device.from_(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("name,want", [
    ("torch", DLBackendName.TORCH), ("PyTorch", DLBackendName.TORCH), ("JAX", DLBackendName.JAX),
    ("xla", DLBackendName.JAX), ("numpy", DLBackendName.NUMPY), ("Np", DLBackendName.NUMPY),
])
def test_backend_names(name: str, want: DLBackendName) -> None:
    assert DLBackendName.from_(name) is want
    assert DLBackendName(name) is want


@pytest.mark.parametrize("name", ["tf", "", "torchx", "cupy"])
def test_bad_backend_names(name: str) -> None:
    with pytest.raises(ConfigError):
        DLBackendName.from_(name)


def test_registry_register_and_get(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DLBackend, "_registry", {})
    imported: list[str] = []
    monkeypatch.setattr("importlib.import_module", lambda m: imported.append(m))

    class Fake:
        pass

    assert DLBackend.register("np", Fake) is Fake
    assert DLBackend.get_backend("numpy") is Fake
    assert imported == []  # registered already: the runtime is not imported
    with pytest.raises(ConfigError):
        DLBackend.get_backend("jax")  # import ran but registered nothing for jax
    assert imported == ["tempo.runtime.backends"]
