"""`codegen_charges.fold`: a statement list's small static charges become one reservation
whose live bytes never fall below the exact charges' at any line (the peak stays an upper
bound), ending where they ended; anything it cannot prove balanced is left exact."""

from __future__ import annotations

from typing import Any

from tempo.core.configs import TUNING
from tempo.runtime.codegen_charges import fold


class _Acct:
    def __init__(self) -> None:
        self.live = 0
        self.peak = 0

    def high(self, op: int, out: int, n: int) -> None:
        self.peak = max(self.peak, self.live)


def _trace(lines: list[str], loops: int = 3) -> tuple[list[int], int]:
    """Live bytes at each `probe()` over a few iterations, and the peak."""
    acct, seen = _Acct(), []
    ns: dict[str, Any] = {"_A": acct, "probe": lambda: seen.append(acct.live)}
    src = f"def run():\n    for i in range({loops}):\n" + "\n".join(lines) + "\n"
    exec(compile(src, "<fold-test>", "exec"), ns)  # noqa: S102 - the test's own source
    ns["run"]()
    return seen, acct.peak


def _charge(n: int, pad: str, op: int = 7) -> list[str]:
    return [f"{pad}_A.live += {n}", f"{pad}if _A.live > _A.peak:",
            f"{pad}    _A.high({op}, 0, {n})"]


def test_balanced_charges_fold_into_one_upper_bound_reservation() -> None:
    p, q = " " * 8, " " * 12
    lines = [f"{p}probe()", *_charge(100, p), f"{p}probe()", *_charge(40, p, op=9),
             f"{p}probe()", f"{p}_A.live -= 100", f"{p}if i == 1:", *_charge(1000, q),
             f"{q}probe()", f"{q}_A.live -= 1000", f"{p}probe()", *_charge(30, p),
             f"{p}probe()", f"{p}_A.live -= 40 + 30", f"{p}probe()"]
    folded, where = fold(lines)
    assert sum("_A.live +=" in x for x in folded) == 2  # one reservation + the nested one
    assert "_A.high(9, 0, 140)" in "\n".join(folded)  # named after the peak's op
    exact, exact_peak = _trace(lines)
    got, peak = _trace(folded)
    assert len(got) == len(exact) and all(g >= e for g, e in zip(got, exact))
    assert got[-1] == exact[-1] == 0 and peak >= exact_peak == 1040
    assert all(folded[where[k]] == lines[k] for k in where)


def test_unbalanced_large_or_jumping_lists_stay_exact() -> None:
    p = " " * 8
    carried = [*_charge(100, p), f"{p}probe()"]  # credited in another list
    big = [*_charge(TUNING.fold_bytes + 1, p), f"{p}_A.live -= {TUNING.fold_bytes + 1}"]
    jump = [*_charge(8, p), f"{p}if i == 1:", f"{p}    continue", f"{p}_A.live -= 8"]
    for lines in (carried, big, jump):
        assert fold(lines)[0] == lines
