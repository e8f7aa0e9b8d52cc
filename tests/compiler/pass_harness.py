"""Running one program with chosen clean-up passes: results must equal the run with every
pass off bit for bit, and the graph the passes left is returned for inspection."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import torch
from programs import run_once

from tempo.compiler.pipeline import CLEANUP
from tempo.core.configs import ExecutionConfig
from tempo.core.sdg import SDG

FLAGS = tuple(p.flag for p in CLEANUP if p.flag)


def only(cfg: ExecutionConfig, flags: Iterable[str]) -> ExecutionConfig:
    """`cfg` with exactly `flags` of the clean-up passes on."""
    on = set(flags)
    return dataclasses.replace(cfg, **{f: f in on for f in FLAGS})


def with_passes(cfg: ExecutionConfig, build: Callable[..., dict[str, Any]], num_dims: int,
                bounds: dict[int, int], flags: Iterable[str]
                ) -> tuple[dict[str, torch.Tensor], SDG]:
    """Results (checked equal, bit for bit, to the run with all passes off) and the graph
    left by the passes `flags`."""
    off, _ = run_once(only(cfg, ()), num_dims, build, bounds)
    on, exe = run_once(only(cfg, flags), num_dims, build, bounds)
    for name, want in off.items():
        assert on[name].dtype == want.dtype, name
        torch.testing.assert_close(on[name], want, rtol=0, atol=0, equal_nan=True)
    return on, exe.sdg


def kinds(sdg: SDG) -> collections.Counter[str]:
    """How many ops of each kind (`add`, `permute`, `cast(float)`, `const(2, 3)` ...)."""
    return collections.Counter(op.describe().split("(")[0] for op in sdg.ops.values())
