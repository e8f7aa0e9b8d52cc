"""Torch programs and libraries audited for GPU correctness on the CPU (`device_audit`):
run on a fake GPU (the backend's GPU code paths), no Tempo code may create a tensor off
the program's device, nor read a tensor on the host during a step, except the crossings
listed in `ALLOWED` with their reason."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from device_audit import DeviceAudit, Finding, audit_torch

from tempo.core.configs import ExecutionConfig

TESTS = Path(__file__).resolve().parents[1]

# (file, function) of a crossing that is right on a GPU too, and why.
ALLOWED: dict[tuple[str, str], str] = {
    ("tempo/runtime/executor/executor.py", "to_host"):
        "swapping offloads to host memory by design (pinned on a GPU)",
    ("tempo/runtime/executor/executor.py", "back"):
        "swapping fetches an offloaded tensor back onto the program's device",
    ("tempo/api/rl/env/env_runner.py", "to_numpy"):
        "gymnasium envs step on the host: actions cross like a sink's tensors",
    ("tempo/api/ops/init.py", "draw"):
        "orthogonal init draws on the host like torch.nn.init (the same weights on every "
        "device); the source moves the draw to the device once",
    ("tempo/runtime/backends/jax_index_checks.py", "check_pending"):
        "one read per run of the jax index kernels' out-of-range flags, to raise as torch "
        "does (jax cannot raise from compiled code)",
    ("tempo/api/llm/models/gpt2_core.py", "_weight"):
        "weights the user gives as numpy are host data (moved per layer by the weight "
        "source, once per run); torch weights stay on their device",
}


def allowed(f: Finding) -> bool:
    """Whether `f` was made on behalf of a crossing `ALLOWED` lists."""
    return any(frame in ALLOWED for frame in f.via)


def audited(fn: Any, *args: Any) -> DeviceAudit:
    with audit_torch() as audit:
        audit.allowed.append(allowed)
        fn(*args)
    return audit


def _module(rel: str) -> ModuleType:
    path = TESTS / rel
    if str(path.parent) not in sys.path:  # the module's own helpers (programs.py, ...)
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"audited_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PROGRAMS = [  # every pipeline mode of tests/core/programs.py runs each
    ("test_programs_temporal", "test_attention_over_a_growing_history_and_a_window"),
    ("test_programs_temporal", "test_backward_recurrence_discounted_return"),
    ("test_programs_temporal", "test_window_behind"),
    ("test_programs_temporal", "test_rnn_matmul_recurrence"),
    ("test_programs_temporal", "test_three_dims_rollout_reset_and_step"),
    ("test_programs_temporal", "test_recurrence_over_a_batched_loss"),
    ("test_programs_spatial", "test_shape_ops"),
    ("test_programs_spatial", "test_source_udf_and_map_udf"),
    ("test_programs_spatial", "test_tick_runs_one_outer_step_at_a_time"),
]


@pytest.mark.parametrize(("module", "name"), PROGRAMS)
def test_program_is_device_clean(module: str, name: str, tmp_path: Path) -> None:
    fn = getattr(_module(f"core/{module}.py"), name)
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), path=str(tmp_path) + "/")
    audit = audited(fn, cfg)
    assert not audit.findings, audit.report()


LIBRARIES = [  # (test module, test function, arguments): rl, optim, nn, llm
    ("examples/test_ppo_artifact.py", "test_artifact_ppo_runs_and_its_loss_is_ppos",
     ("torch", 2, 3, 4)),
    ("api/optim/test_training.py", "test_mlp_training_tracks_torch_optim", ("adam",)),
    ("api/nn/test_sequence_layers.py",
     "test_causal_attention_equals_torch_mha_forward_and_backward", ()),
    ("api/llm/test_gpt2_core.py", "test_gpt2_core_equals_reference", (2, "causal")),
    ("api/rl/test_env.py", "test_trivial_env_broadcasts_its_state_and_rewards_minus_abs", ()),
]


@pytest.mark.parametrize(("rel", "name", "args"), LIBRARIES,
                         ids=[f"{r.rpartition('/')[2]}::{n}" for r, n, _ in LIBRARIES])
def test_library_program_is_device_clean(rel: str, name: str, args: tuple) -> None:
    audit = audited(getattr(_module(rel), name), *args)
    assert not audit.findings, audit.report()


def test_the_audit_sees_host_tensors_and_syncs_made_by_tempo_code() -> None:
    """A factory without a device and an `.item()` in generated code are findings; the
    same calls in a user's function are not (it may read its tensors as it likes)."""
    ns: dict[str, Any] = {"torch": torch}
    src = "def step(x):\n    z = torch.zeros(3)\n    return x.sum().item() + z.sum()\n"
    exec(compile(src, "<tempo-generated>", "exec"), ns)  # noqa: S102
    user: dict[str, Any] = {"torch": torch}
    exec(compile(src, "user_udf.py", "exec"), user)  # noqa: S102
    with audit_torch() as audit:
        ns["step"](torch.ones(2))
        user["step"](torch.ones(2))
        with audit.step():
            ns["step"](torch.ones(2))
            user["step"](torch.ones(2))
    kinds = sorted((f.kind, f.what) for f in audit.findings)
    assert kinds == [("host-created", "torch.zeros"),
                     ("host-sync", "aten._local_scalar_dense.default")], audit.report()
    assert all(f.where.startswith("<tempo-generated>:") for f in audit.findings)


def test_trivial_env_makes_its_buffers_on_its_device() -> None:
    """The torch TrivialEnv (the CleanRL/rl-games baselines' env) draws, steps and flags
    on the device it is given."""
    from tempo.api.rl.env.trivial_env import TrivialEnv

    env = TrivialEnv(4, (2, 3), 3, backend="torch", seed=0, device="cpu")
    with audit_torch() as audit:
        env.reset()
        with audit.step():
            for _ in range(3):
                obs, reward, term, _, _ = env.step(torch.zeros(4, 1))
    assert not audit.findings, audit.report()
    assert obs.shape == (4, 2, 3) and bool(term.all()) and reward.shape == (4,)
