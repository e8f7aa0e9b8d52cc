"""Jax programs audited on a fake GPU (`jax_audit`): no Tempo code reads a device array on
the host during a run, and programs whose steps pass only arrays to jax make no implicit
host-to-device transfer once warm (`jax.transfer_guard("disallow")`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax_audit import audit_jax
from test_torch_device_audit import LIBRARIES, PROGRAMS, _module, allowed

from tempo.core.configs import ExecutionConfig

# Steps that pass no Python ints to jax kernels (see jax_audit's docstring).
GUARDED = ["test_backward_recurrence_discounted_return", "test_window_behind",
           "test_rnn_matmul_recurrence", "test_shape_ops"]


def _cfg(tmp_path: Path) -> ExecutionConfig:
    return dataclasses.replace(ExecutionConfig.test_cfg(), backend="jax", dev="fake-gpu",
                               path=str(tmp_path) + "/")


SLOW = {"test_attention_over_a_growing_history_and_a_window"}  # ~35 s on jax (all modes)


@pytest.mark.parametrize(("module", "name"), [
    pytest.param(m, n, marks=pytest.mark.slow) if n in SLOW else (m, n) for m, n in PROGRAMS])
def test_jax_program_reads_nothing_on_the_host(module: str, name: str, tmp_path: Path
                                               ) -> None:
    fn = getattr(_module(f"core/{module}.py"), name)
    with audit_jax(guard=False) as audit:
        audit.allowed.append(allowed)
        fn(_cfg(tmp_path))
    assert not audit.findings, audit.report()


@pytest.mark.parametrize("name", GUARDED)
def test_warm_jax_steps_make_no_implicit_transfers(name: str, tmp_path: Path) -> None:
    module = next(m for m, n in PROGRAMS if n == name)
    fn = getattr(_module(f"core/{module}.py"), name)
    with audit_jax() as audit:
        audit.allowed.append(allowed)
        fn(_cfg(tmp_path))
    assert not audit.findings, audit.report()


@pytest.mark.slow  # ~30 s: jit compilation of the whole PPO program
def test_jax_ppo_reads_nothing_on_the_host() -> None:
    rel, name, _ = LIBRARIES[0]
    with audit_jax(guard=False) as audit:
        audit.allowed.append(allowed)
        getattr(_module(rel), name)("jax", 2, 2, 4)
    assert not audit.findings, audit.report()


def test_the_jax_audit_sees_host_reads_and_implicit_transfers() -> None:
    ns: dict[str, Any] = {"np": np}
    exec(compile("def read(x):\n    return np.asarray(x)\n", "<tempo-generated>",  # noqa: S102
                 "exec"), ns)
    with audit_jax() as audit:
        ns["read"](jnp.ones(3))  # outside a step: not counted
        with audit.step():
            ns["read"](jnp.ones(3))
    assert [f.where for f in audit.findings] == ["<tempo-generated>:2 (read)"]
    with pytest.raises(Exception, match="Disallowed host-to-device"), \
            jax.transfer_guard("disallow"):
        jax.jit(lambda a: a + 1)(np.ones(3))
