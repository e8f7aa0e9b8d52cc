"""Every program test of tests/core run with every clean-up pass on. The core suite runs
them with every pass off (and its `run` helper compares, bit for bit, an optimised run
against that one); here the all-on run is the base, so programs that run once (sinks
with side effects) are covered too. Each test checks against eager torch."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from programs import all_passes, program_tests

CASES = program_tests()
# Tests that read a tensor no sink depends on: API §4.1 makes it readable only without
# dead-code elimination, so they run with every other pass on.
READS_DEAD_TENSORS = {"test_programs_spatial::test_executor_reads_points_and_slices"}


@pytest.mark.parametrize(("name", "test"), CASES, ids=[n for n, _ in CASES])
def test_core_program_with_all_passes(name: str, test: Callable[[Any], None], cfg) -> None:
    on = all_passes(dataclasses.replace(cfg, validate_pipeline_stages=True))
    if name in READS_DEAD_TENSORS:
        on = dataclasses.replace(on, enable_dead_code_elim=False, enable_gc=False)
    test(on)
