"""A device audit for the jax backend (the torch one is `device_audit`): steady-state steps
of a program run under `jax.transfer_guard("disallow")`, so a host value that jax would
copy over implicitly (a numpy array or Python scalar reaching a jitted kernel or a jnp
op, an index built on the host) raises, and every read of a device array on the host
made by Tempo code during a step (`np.asarray(x)`, `float(x)`, `x.item()`, ...) is
recorded. Explicit `jax.device_put`s stay allowed: that is how data the user gives
(a UDF's result) is meant to cross.

Under the guard, the first `execute()` of each executor is a warm-up (jit compilation,
constants put on the device once, caches filled) and the audit covers the run after it:
`execute()` runs the program twice (a program with sinks sees them twice).

Python ints passed to a jitted kernel (a loop counter, a slice offset) are transfers too
under the guard: each becomes a device scalar per call. They wait for nothing, but the
guard refuses them: programs whose steps pass counters to jax kernels (dynamic slices of
stacked stores, tiled attention's block bounds, jax scans' chunk offsets) are audited
for host reads only."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import jax
import numpy as np
from device_audit import SKIP, DeviceAudit
from jax._src.array import ArrayImpl

from tempo.runtime.executor.executor import PythonExecutor

SKIP.append(__file__)


@contextlib.contextmanager
def audit_jax(guard: bool = True) -> Iterator[DeviceAudit]:
    """Record host reads in every executor's `execute()`; with `guard`, run it twice and
    audit the second run under the transfer guard too (see the module)."""
    audit = DeviceAudit()
    value = ArrayImpl.__dict__["_value"]
    real_execute = PythonExecutor.execute

    def read(x: Any) -> Any:
        if audit.phase == "step":
            audit.record("host-read", "jax.Array on the host")
        return value.fget(x)

    def numpy_of(real: Any) -> Any:
        def convert(a: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(a, jax.Array) and audit.phase == "step":
                audit.record("host-read", f"np.{real.__name__}(jax.Array)")
            return real(a, *args, **kwargs)
        return convert

    def execute(exe: Any) -> None:
        if not guard:
            with audit.step():
                return real_execute(exe)
        real_execute(exe)
        exe.reset()
        with audit.step(), jax.transfer_guard("disallow"):
            return real_execute(exe)

    converters = {name: getattr(np, name) for name in _CONVERTERS}
    ArrayImpl._value = property(read)  # type: ignore[method-assign,assignment]
    PythonExecutor.execute = execute  # type: ignore[method-assign]
    for name, real in converters.items():
        setattr(np, name, numpy_of(real))
    try:
        yield audit
    finally:
        ArrayImpl._value = value  # type: ignore[method-assign]
        PythonExecutor.execute = real_execute  # type: ignore[method-assign]
        for name, real in converters.items():
            setattr(np, name, real)


# On the CPU numpy reads a jax array through the buffer protocol, not `_value`: the
# converters Tempo calls are watched themselves.
_CONVERTERS = ("asarray", "array", "ascontiguousarray")
