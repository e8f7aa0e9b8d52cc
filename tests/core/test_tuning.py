"""`tempo.core.configs.TUNING`: the measured internal thresholds (not ExecutionConfig fields)
live in one place, each is read where it acts — so overriding it changes behaviour — and
`tuned()` restores them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from tempo.compiler.passes.grouping import compiled
from tempo.core.configs import TUNING, ExecutionConfig, Tuning, tuned
from tempo.runtime import regions
from tempo.runtime.codegen_charges import fold
from tempo.runtime.store_choice import compaction_slack
from tempo.runtime.stores import MemoryAccountant
from tempo.runtime.swap import Swapper

ROOT = Path(__file__).resolve().parents[2] / "tempo"


def test_every_field_is_read_where_it_acts() -> None:
    """No field that silently does nothing: each is read as TUNING.<name> in the library."""
    source = "\n".join(p.read_text() for p in ROOT.rglob("*.py")
                       if p.name != "configs.py" or p.parent.name != "core")
    for f in dataclasses.fields(Tuning):
        assert re.search(rf"\bTUNING\.{f.name}\b", source), f"{f.name} is read nowhere"


def test_tuned_overrides_inside_and_restores_after() -> None:
    before = dataclasses.replace(TUNING)
    with tuned(compaction_slack_share=1, swap_headroom=2) as t:
        assert t is TUNING and TUNING.compaction_slack_share == 1
    assert TUNING == before
    with pytest.raises(TypeError, match="no_such_threshold"), tuned(no_such_threshold=1):
        pass
    assert TUNING == before


def test_compaction_slack_follows_its_share() -> None:
    assert compaction_slack(8) == 2  # W/4: 25% above the window
    with tuned(compaction_slack_share=1):
        assert compaction_slack(8) == 8


def test_swap_headroom_decides_when_offloads_run() -> None:
    acct = MemoryAccountant(800, str)
    swapper = Swapper(acct, lambda x: x, lambda x: x, 0)
    acct.live = 650  # 150 of 800 free: more than cap/8, less than cap/2
    assert not swapper.pressed()
    with tuned(swap_headroom=2):
        assert swapper.pressed()


def _charges(n: int) -> list[str]:
    return [f"    _A.live += {n}", "    if _A.live > _A.peak:", "        _A.high(1, 0)",
            "    k()", f"    _A.live -= {n}", "    _A.live += 8", "    if _A.live > _A.peak:",
            "        _A.high(2, 0)", "    _A.live -= 8"]


def test_fold_bytes_bounds_what_folds() -> None:
    lines = _charges(1000)
    assert len(fold(lines)[0]) < len(lines)  # 1000 B <= 256 KiB: one reservation
    with tuned(fold_bytes=999):
        assert fold(lines)[0] == lines


def test_payback_seconds_decide_when_a_region_compiles() -> None:
    compiled: list[int] = []

    def compiler(fn: object) -> object:
        compiled.append(1)
        return fn

    with tuned(payback_s=3600.0):
        slow = regions.after_payback(lambda x: x + 1, compiler, sample=1)
        assert [slow(k) for k in range(3)] == [1, 2, 3] and not compiled
    with tuned(payback_s=0.0):
        fast = regions.after_payback(lambda x: x + 1, compiler, sample=1)
        assert fast(1) == 2 and compiled == [1]


def test_torch_compiles_regions_past_its_element_threshold() -> None:
    cfg = ExecutionConfig.test_cfg()
    cfg.enable_group_fusions = True
    big = TUNING.torch_compile_min_elements
    assert compiled(cfg, big, True) and not compiled(cfg, big - 1, True)
    with tuned(torch_compile_min_elements=big * 2):
        assert not compiled(cfg, big, True)
