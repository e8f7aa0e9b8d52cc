"""Every way of running a compiled program fails alike (API §7 "every user error" and
§7.10): a backend failure in `execute()`, `tick()` or `execute_until_barrier()` is a
BackendError naming the op and the user's line, never a raw numpy/jax/torch exception."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.errors import BackendError

BACKENDS = ["numpy", "jax", "torch"]


def _program(backend: str, tmp: Path, fail: bool, seen: list[int]) -> Any:
    """Per step t of T=4: a sink of t; with `fail`, a `-` on bools (numpy, jax and torch
    all refuse it) at every step."""
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=backend, dev="cpu",
                              path=str(tmp) + "/")
    ctx = TempoContext(cfg, num_dims=1)
    (t, T), = ctx.variables_and_bounds
    with ctx:
        RT.from_symbol(t).sink_udf(lambda v: seen.append(int(v)))
        if fail:
            x = RT.const(np.array([True, False])) & (RT.from_symbol(t) >= 0)
            (x - x).sink_udf(lambda v: None)
        RT.barrier("end")
    return ctx.compile({T: 4})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("entry", ["execute", "tick", "execute_until_barrier"])
def test_backend_failures_name_the_op_from_every_entry_point(
        backend: str, entry: str, tmp_path: Path) -> None:
    exe = _program(backend, tmp_path, True, [])
    run = {"execute": exe.execute, "tick": exe.tick,
           "execute_until_barrier": lambda: exe.execute_until_barrier("end")}[entry]
    with pytest.raises(BackendError) as info:
        run()
    msg = str(info.value)
    assert "sub" in msg and backend in msg and "test_entry_point_errors.py" in msg
    with pytest.raises(BackendError):  # the failed run ended: the next one starts afresh
        run()


@pytest.mark.parametrize("backend", BACKENDS)
def test_stepping_runs_match_execute(backend: str, tmp_path: Path) -> None:
    """tick() and execute_until_barrier() (of the barrier recorded last: to the end) run
    the same points as execute(), in order, and start a fresh run once one ended."""
    whole: list[int] = []
    _program(backend, tmp_path, False, whole).execute()
    assert whole == [0, 1, 2, 3]
    seen: list[int] = []
    exe = _program(backend, tmp_path, False, seen)
    assert exe.tick() and seen == [0]
    assert exe.tick() and seen == [0, 1]
    exe.execute_until_barrier("end")
    assert seen == whole
    exe.reset()
    while exe.tick():
        pass
    assert seen == whole + whole
