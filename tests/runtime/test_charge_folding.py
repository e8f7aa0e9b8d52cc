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


class _Store:
    """A store whose frees credit the accountant (as block and point stores' do)."""

    def __init__(self, acct: _Acct) -> None:
        self.acct = acct

    def pop(self, key: tuple, default: Any = None) -> None:
        self.acct.live -= 3

    def pop_range(self, pre: tuple, lo: int, hi: int) -> None:
        self.acct.live -= 5 * (hi - lo)


def _trace(lines: list[str], loops: int = 3) -> tuple[list[int], int]:
    """Live bytes at each `probe()` over a few iterations, and the peak."""
    acct, seen = _Acct(), []
    ns: dict[str, Any] = {"_A": acct, "probe": lambda: seen.append(acct.live),
                          "s9_0": _Store(acct)}
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


def test_tighten_merges_neighbours_exactly_under_a_cap() -> None:
    """`tighten` (used under a device cap) keeps live bytes at every probe and the peak
    exactly as the unmerged charges give them, in random statement lists."""
    import random

    from tempo.runtime.codegen_charges import tighten

    rng = random.Random(5)
    p = " " * 8
    for _ in range(200):
        lines, live = [], 0
        for _ in range(rng.randint(1, 14)):
            r = rng.random()
            if r < 0.35 or live == 0:
                n = rng.choice((8, 16, 64, 1000))
                lines += _charge(n, p, op=rng.randint(1, 9))
                live += n
            elif r < 0.7:
                n = rng.choice([x for x in (8, 16, 64, 1000) if x <= live] or [live])
                lines.append(f"{p}_A.live -= {n}")
                live -= n
            elif r < 0.8:
                lines.append(f"{p}vs{rng.randint(1, 9)}_0 = None")
            elif r < 0.84:
                lines.append(f"{p}s9_0.pop((i, ), None)")
            elif r < 0.88:  # a guarded free (the decoder's weights at its last step)
                lines += [f"{p}if (i == 1):", f"{p}    s9_0.pop_range((i, ), 0, 2)"]
            elif r < 0.9:  # not a free only: stays where it is
                lines += [f"{p}if (i == 2):", f"{p}    probe()"]
            else:
                lines.append(f"{p}probe()")
        lines.append(f"{p}probe()")
        tight, where = tighten(lines)
        assert _trace(tight) == _trace(lines), "\n".join(lines)
        assert all(tight[where[k]] == lines[k] for k in where)
    lines = [*_charge(64, p), f"{p}_A.live -= 64", f"{p}vs3_0 = None", f"{p}_A.live -= 16",
             *_charge(16, p, op=4), f"{p}_A.live -= 8", *_charge(100, p, op=5)]
    tight = tighten(lines)[0]
    # -64 -16 +16 -8 +100: the credit absorbs the smaller charge and the next credit, and
    # meets the larger charge as one statement with its check
    assert tight == [*_charge(64, p), f"{p}vs3_0 = None",
                     f"{p}_A.live += 28", f"{p}if _A.live > _A.peak:", f"{p}    _A.high(5, 0, 100)"]
    # the E1 decoder's pattern: each kernel's charge, its credit, its weight freed at the
    # last step, the next kernel's charge of as many bytes: no statement at all
    guard = [f"{p}if (d0 == 255):", f"{p}    s9_0.pop((1, ), None)"]
    lines = [*_charge(64, p, op=1), f"{p}k1()", f"{p}_A.live -= 64", *guard,
             *_charge(64, p, op=2), f"{p}k2()", f"{p}_A.live -= 64", *guard, f"{p}k3()"]
    assert tighten(lines)[0] == [*_charge(64, p, op=1), f"{p}k1()", *guard, f"{p}k2()",
                                 *guard, f"{p}_A.live -= 64", f"{p}k3()"]
    # an else after the guarded free, or anything else under it, keeps the credit in place
    for body in ([*guard, f"{p}else:", f"{p}    probe()"],
                 [f"{p}if (d0 == 255):", f"{p}    s9_0.pop((1, ), None)", f"{p}    probe()"]):
        lines = [f"{p}_A.live -= 64", *body, *_charge(64, p, op=2)]
        assert tighten(lines)[0] == lines
