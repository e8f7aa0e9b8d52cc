"""Devices a program runs on, parsed from config strings ("cpu", "gpu:0-2", "fake-gpu").
Only the description lives in core; backends map it to their own device objects."""

from __future__ import annotations

from dataclasses import dataclass

from tempo.core.errors import ConfigError, user_site


@dataclass(frozen=True)
class DeviceGroup:
    """A kind of device and the indices used: `gpu` with `(0, 1)` for "gpu:0,1".
    `fake_gpu` is the CPU pretending to be a GPU (exercises GPU code paths in tests)."""

    kind: str
    indices: tuple[int, ...] = (0,)

    @property
    def is_gpu(self) -> bool:
        return self.kind == "gpu"

    @property
    def is_cpu(self) -> bool:
        return self.kind == "cpu"

    @property
    def is_fake_gpu(self) -> bool:
        return self.kind == "fake_gpu"

    def __str__(self) -> str:
        name = self.kind.replace("_", "-")
        if self.kind == "cpu" or self.indices == (0,):
            return name
        return f"{name}:{','.join(map(str, self.indices))}"


_KINDS = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu", "fake-gpu": "fake_gpu",
          "fake_gpu": "fake_gpu", "fake-cuda": "fake_gpu", "fake_cuda": "fake_gpu"}


def _parse_indices(spec: str, full: str) -> tuple[int, ...]:
    out: list[int] = []
    try:
        for part in spec.split(","):
            if "-" in part:
                lo, hi = (int(p) for p in part.split("-"))
                if hi < lo:
                    raise ValueError
                out.extend(range(lo, hi + 1))
            else:
                out.append(int(part))
    except ValueError:
        raise ConfigError(f"bad device indices in {full!r} (use gpu:0, gpu:0,1 or gpu:0-2)",
                          site=user_site()) from None
    if any(i < 0 for i in out) or len(set(out)) != len(out):
        raise ConfigError(f"bad device indices in {full!r}", site=user_site())
    return tuple(out)


class device:  # noqa: N801 - public name fixed by the API
    """Namespace: `device.cpu`, `device.gpu`, `device.fake_gpu`, `device.from_(s)`."""

    cpu = DeviceGroup("cpu")
    gpu = DeviceGroup("gpu")
    fake_gpu = DeviceGroup("fake_gpu")

    @staticmethod
    def from_(spec: str | DeviceGroup) -> DeviceGroup:
        """Parse "cpu", "gpu"/"cuda" (optionally ":0", ":0,1", ":0-2"), "fake-gpu"."""
        if isinstance(spec, DeviceGroup):
            return spec
        if not isinstance(spec, str):
            raise ConfigError(f"device must be a string, got {spec!r}", site=user_site())
        s = spec.strip().lower()
        name, sep, idx = s.partition(":")
        kind = _KINDS.get(name)
        if kind is None:
            known = ", ".join(sorted(_KINDS))
            raise ConfigError(f"unknown device {spec!r} (known: {known})", site=user_site())
        if not sep:
            return DeviceGroup(kind)
        if kind == "cpu":
            raise ConfigError(f"cpu takes no device index: {spec!r}", site=user_site())
        return DeviceGroup(kind, _parse_indices(idx, spec))
