"""Shared fixtures: a fresh test config per test (GC/DCE/optimisations off)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from tempo.core.configs import ExecutionConfig


@pytest.fixture
def cfg(tmp_path) -> Iterator[ExecutionConfig]:  # type: ignore[no-untyped-def]
    yield dataclasses.replace(ExecutionConfig.test_cfg(), path=str(tmp_path) + "/")
