"""A device audit for the torch backend: every test here runs on the CPU, yet the code
must be right on a GPU. Two torch modes watch a program run and record, with the Tempo
line that made it,

* every tensor a factory (`torch.zeros`, `tensor`, `as_tensor`, `arange`, `full`,
  `rand*`, `eye`, `linspace`, `from_numpy`, ...) creates without the program's device:
  on a GPU it would sit on the host, and each use would copy it over, or fail;
* every crossing to the host on the per-step path (`.item()`, `bool(t)`, `int(t)`,
  `.tolist()`, `.numpy()`, `.cpu()`, `np.asarray(t)`, and the ops that make a GPU wait
  for their result's size: `nonzero`, `masked_select`, boolean-mask indexing, `unique`).

Only calls made by Tempo (its package or its generated code) count: a user's UDF may
read its tensors on the host as it likes (a sink is a legitimate crossing). Host syncs
count only inside `execute()` (`phase="step"`); factories count at compile time too,
since a constant built there on the host is copied at every step on a GPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import tempo
from tempo.runtime.backends.torch import TorchBackend
from tempo.runtime.executor.executor import PythonExecutor

_TEMPO_DIR = os.path.dirname(tempo.__file__)


def _package_dir(name: str) -> str:
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    return os.path.dirname(origin) + os.sep if origin else "\0"


# Frames of these are passed over to find who made a call: the libraries, the audits.
SKIP: list[str] = [*(_package_dir(p) for p in ("torch", "jax", "jaxlib", "numpy")),
                   os.path.dirname(contextlib.__file__) + os.sep + "contextlib", __file__]

FACTORIES = frozenset({
    torch.tensor, torch.as_tensor, torch.asarray, torch.zeros, torch.ones, torch.empty,
    torch.full, torch.arange, torch.range, torch.linspace, torch.logspace, torch.rand,
    torch.randn, torch.randint, torch.randperm, torch.eye, torch.empty_strided,
    torch.scalar_tensor, torch.tril_indices, torch.triu_indices, torch.normal,
    torch.bernoulli,
})
# These create a tensor only when no tensor argument gives the device (`as_tensor(t)`
# of a tensor is `t` itself; `normal(mean_tensor, std)` draws where `mean_tensor` lives).
_TENSOR_ARG_FACTORIES = frozenset({torch.normal, torch.bernoulli, torch.as_tensor,
                                   torch.asarray, torch.tensor})

HOST_METHODS = frozenset({"numpy", "tolist", "cpu", "__array__"})
SYNC_OPS = frozenset({
    torch.ops.aten._local_scalar_dense.default, torch.ops.aten.nonzero.default,
    torch.ops.aten.masked_select.default, torch.ops.aten.is_nonzero.default,
    torch.ops.aten.equal.default, torch.ops.aten._unique2.default,
    torch.ops.aten.unique_dim.default, torch.ops.aten.unique_consecutive.default,
    torch.ops.aten.repeat_interleave.Tensor,
})


@dataclasses.dataclass(frozen=True)
class Finding:
    """One call that would be wrong (or slow) on a GPU, at the Tempo line that made it;
    `via`: the Tempo functions further out, as (file, function), innermost first."""

    kind: str  # "host-created" | "host-sync" | "host-read"
    what: str
    where: str
    via: tuple[tuple[str, str], ...] = dataclasses.field(default=(), compare=False)

    def __str__(self) -> str:
        chain = " <- ".join(f"{f}:{fn}" for f, fn in self.via[1:4])
        return f"{self.kind}: {self.what} at {self.where}" + (f" <- {chain}" if chain else "")


def _tempo_file(name: str) -> str | None:
    if name.startswith("<tempo"):
        return name
    if name.startswith(_TEMPO_DIR):
        return os.path.relpath(name, os.path.dirname(_TEMPO_DIR))
    return None


def tempo_caller(frame: FrameType | None) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """`file:line (function)` of the nearest caller outside the libraries and the audits,
    if it is Tempo's (package or generated code), with the Tempo functions it was called
    through; None when the caller is user code (a UDF)."""
    while frame is not None and frame.f_code.co_filename.startswith(tuple(SKIP)):
        frame = frame.f_back
    if frame is None:
        return None
    file = _tempo_file(frame.f_code.co_filename)
    if file is None:
        return None
    where = f"{file}:{frame.f_lineno} ({frame.f_code.co_name})"
    via: list[tuple[str, str]] = []
    f: FrameType | None = frame
    while f is not None and len(via) < 8:
        name = _tempo_file(f.f_code.co_filename)
        if name is not None:
            via.append((name, f.f_code.co_name))
        f = f.f_back
    return where, tuple(via)


class DeviceAudit:
    """The findings of one audited run, and the device the program runs on."""

    def __init__(self, device: torch.device | None = None) -> None:
        self.device = device  # None: any explicit device (it comes from the tensors)
        self.phase = "compile"
        self.findings: list[Finding] = []
        self.allowed: list[Callable[[Finding], bool]] = []

    def record(self, kind: str, what: str) -> None:
        caller = tempo_caller(sys._getframe(1))
        if caller is None:
            return
        f = Finding(kind, what, *caller)
        if f not in self.findings and not any(ok(f) for ok in self.allowed):
            self.findings.append(f)

    def on_device(self, dev: Any) -> bool:
        return dev is not None and (self.device is None or torch.device(dev) == self.device)

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        """Host syncs count inside this block (the program's `execute()`)."""
        before, self.phase = self.phase, "step"
        try:
            yield
        finally:
            self.phase = before

    def report(self) -> str:
        return "\n".join(map(str, self.findings))


class _Functions(TorchFunctionMode):
    def __init__(self, audit: DeviceAudit) -> None:
        super().__init__()
        self.audit = audit

    def __torch_function__(self, func: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        if func in FACTORIES and not self.audit.on_device(kwargs.get("device")):
            tensor_arg = any(isinstance(a, torch.Tensor) for a in args)
            if not (func in _TENSOR_ARG_FACTORIES and tensor_arg):
                self.audit.record("host-created", f"torch.{name}")
        elif name in HOST_METHODS and self.audit.phase == "step":
            self.audit.record("host-sync", f"Tensor.{name}")
        elif (name == "to" and self.audit.phase == "step"
              and _to_host(args, kwargs, self.audit.device)):
            self.audit.record("host-sync", "Tensor.to(cpu)")
        return func(*args, **kwargs)


class _Dispatch(TorchDispatchMode):
    def __init__(self, audit: DeviceAudit) -> None:
        super().__init__()
        self.audit = audit

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if self.audit.phase == "step":
            if func in SYNC_OPS:
                self.audit.record("host-sync", str(func))
            elif func is torch.ops.aten.index.Tensor and _bool_index(args):
                self.audit.record("host-sync", "boolean-mask indexing")
        return func(*args, **kwargs)


def _to_host(args: tuple, kwargs: dict, program: torch.device | None) -> bool:
    """A `.to(...)` onto the host: on a fake GPU the program's device is the CPU too, so
    only the backend's own device object counts as the program's."""
    dev = kwargs.get("device")
    for a in args[1:]:
        if isinstance(a, str | torch.device):
            dev = a
    return dev is not None and dev is not program and torch.device(dev).type == "cpu"


def _bool_index(args: tuple) -> bool:
    idx = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in idx)


_real_from_numpy = torch.from_numpy


@contextlib.contextmanager
def audit_torch(fake_gpu: bool = True) -> Iterator[DeviceAudit]:
    """Record, while the block runs, what `DeviceAudit` describes. The device is each
    executor's backend's, and its steps (`execute`, `tick`, `execute_until_barrier`) are
    the per-step path. With `fake_gpu`, every torch program runs on dev="fake-gpu" whatever
    its config says: the backend takes its GPU code paths (no host shortcuts)."""
    audit = DeviceAudit()
    real_config = TorchBackend.__dict__["from_config"]

    def from_numpy(a: Any) -> torch.Tensor:
        audit.record("host-created", "torch.from_numpy")
        return _real_from_numpy(a)

    def stepping(real: Callable) -> Callable:
        def run(exe: Any, *args: Any, **kwargs: Any) -> Any:
            audit.device = exe.backend.device
            with audit.step():
                return real(exe, *args, **kwargs)
        return run

    saved = {name: getattr(PythonExecutor, name) for name in _STEPS}
    torch.from_numpy = from_numpy  # not a torch function: the mode never sees it
    if fake_gpu:
        TorchBackend.from_config = classmethod(  # type: ignore[method-assign,assignment]
            lambda cls, cfg: cls(dev="fake-gpu", seed=cfg.seed))
    for name, real in saved.items():
        setattr(PythonExecutor, name, stepping(real))
    try:
        with _Functions(audit), _Dispatch(audit):
            yield audit
    finally:
        torch.from_numpy = _real_from_numpy
        TorchBackend.from_config = real_config  # type: ignore[method-assign]
        for name, real in saved.items():
            setattr(PythonExecutor, name, real)


_STEPS = ("execute", "_next_marker")  # tick and execute_until_barrier step through the latter
