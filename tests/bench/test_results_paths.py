"""Bench outputs go to the repository's results/, whatever the working directory: the pair
benches wrote `results/e5/e5_pair.txt` (and tpt_pair, call_overhead, ...) relative to the
cwd, so a run from another directory left a stray results/ there and the repository's log
missed the run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tempo
from tempo.bench import results


def test_results_root_is_the_repository_s() -> None:
    assert results.RESULTS == Path(tempo.__file__).resolve().parents[1] / "results"


def test_append_lines_is_anchored_at_results(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    root, elsewhere = tmp_path / "repo" / "results", tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setattr(results, "RESULTS", root)
    monkeypatch.chdir(elsewhere)
    out = results.append_lines("e5/e5_pair.txt", ["run 1"])
    results.append_lines("e5/e5_pair.txt", ["run 2"])
    assert out == root / "e5" / "e5_pair.txt"
    assert out.read_text() == "run 1\nrun 2\n"
    assert not (elsewhere / "results").exists()
    absolute = tmp_path / "mine.txt"
    assert results.append_lines(absolute, ["x"]) == absolute


def test_no_bench_module_writes_under_a_cwd_relative_results() -> None:
    """Every bench path under results/ comes from `results_path` (or a user's --out)."""
    bench = Path(tempo.__file__).resolve().parent / "bench"
    found = [f"{p.relative_to(bench)}:{k}" for p in sorted(bench.rglob("*.py"))
             for k, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"""["']results/""", line) and not line.lstrip().startswith("#")]
    assert not found, found
