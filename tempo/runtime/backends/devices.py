"""Which physical device a backend runs on, from the config's `dev` string (API §4.3).

One rule set for every backend, so torch and jax agree on what "gpu:1" means:

* "cpu" runs on the host.
* "gpu"/"cuda" (= "gpu:0") runs on the first GPU; on a machine without one it runs on
  the CPU and warns once per process (API §7 fix 12: the config's default is "gpu").
* "gpu:N" names one GPU: N must be one this machine has, else a `ConfigError` naming the
  user's line (a run silently on another device would be a wrong answer to the request).
* several GPUs ("gpu:0,1", "gpu:0-2"): Tempo runs a program on one device, so this is an
  `UnsupportedError` rather than a run on the first of them.
* "fake-gpu" is the CPU pretending to be a GPU: the backend takes its GPU code paths
  (no host shortcuts: `Placement.host_shortcuts` is False), which the device tests audit.
* numpy has no GPU: plain "gpu" (the config's default) runs on the CPU and warns once,
  as on a machine without a GPU, so a program with the default config runs unchanged on
  every backend; a named GPU other than the first, several, or a fake one is an
  `UnsupportedError`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from tempo.core.device import device
from tempo.core.errors import ConfigError, UnsupportedError, user_site

_WARNED: set[str] = set()


@dataclass(frozen=True)
class Placement:
    """Where a backend puts its tensors: GPU `index`, or the host (`index` None).
    `host_shortcuts`: the tensors live in host memory and nothing pretends otherwise, so a
    kernel may read a value on the host (`int(i)`) at no cost; on a GPU (or a fake one)
    that read would wait for the device."""

    index: int | None
    host_shortcuts: bool

    @property
    def on_gpu(self) -> bool:
        return self.index is not None


def place(dev: str, backend: str, gpu_count: int) -> Placement:
    """The placement of `dev` for `backend` on a machine with `gpu_count` GPUs."""
    group = device.from_(dev)
    if group.is_cpu:
        return Placement(None, True)
    if backend == "numpy" and not group.is_fake_gpu and group.indices == (0,):
        _warn_once(f"dev={dev!r} but the numpy backend has no GPU: running on the CPU")
        return Placement(None, True)
    if backend == "numpy":
        raise UnsupportedError(
            f"the numpy backend runs on the CPU only: dev={dev!r} asks for a GPU; use "
            "dev='cpu', or backend='torch'/'jax' for a GPU", site=user_site())
    if len(group.indices) > 1:
        raise UnsupportedError(
            f"dev={dev!r} asks for {len(group.indices)} devices: Tempo runs a program on "
            f"one device; pick one, e.g. dev='gpu:{group.indices[0]}'", site=user_site())
    if group.is_fake_gpu:
        return Placement(None, False)
    (index,) = group.indices
    if gpu_count == 0 and index == 0:
        _warn_once(f"dev={dev!r} but {backend} sees no GPU on this machine: running on the "
                   "CPU")
        return Placement(None, True)
    if index >= gpu_count:
        have = "no GPU" if gpu_count == 0 else (
            f"{gpu_count} GPU{'s' if gpu_count > 1 else ''} (gpu:0"
            f"{f'-{gpu_count - 1}' if gpu_count > 1 else ''})")
        raise ConfigError(f"dev={dev!r}: this machine has {have} visible to {backend}",
                          site=user_site())
    return Placement(index, False)


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, stacklevel=3)
