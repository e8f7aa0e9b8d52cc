"""The acceptance sweeps' user-mistake runner: each case should raise a TempoError subclass
whose message names the user's file:line and uses the user's names (no T0.0 / op#k / isl /
d0 when dims are named). A sweep's mistakes file registers cases with `@case` and ends with
`run("mistakes5")` (its file name, for the site check)."""
import re
import sys
import traceback
from collections.abc import Callable
from typing import Any

from tempo.core.errors import TempoError

BAD = [r"\bT\d+\.\d+\b", r"#\d", r"\bisl\b", r"\bd0\b", r"\bD0\b", r"<lambda>\(\) takes",
       r"\bop_id\b"]
CASES: list[Callable[[], None]] = []


def backend_config() -> Any:
    """The config of a mistakes file's run: `python mistakesN.py [backend]` (torch)."""
    from tempo.core.configs import ExecutionConfig

    return ExecutionConfig(dev="cpu", backend=sys.argv[1] if len(sys.argv) > 1 else "torch")


def context(cfg: Any, n: int) -> tuple[Any, ...]:
    """A TempoContext over `n` dims, then each dim's variable and bound: c, b, B, t, T."""
    from tempo.api import TempoContext

    c = TempoContext(cfg, num_dims=n)
    return (c, *[x for vb in c.variables_and_bounds for x in vb])


def case(f: Callable[[], None]) -> Callable[[], None]:
    CASES.append(f)
    return f


def run(file_stem: str) -> None:
    """Run every registered case; one line each: the error class, whether the user's
    site is named, internal names that leaked, and the message."""
    for f in CASES:
        name = f.__name__
        try:
            f()
            print(f"{name}: NO ERROR")
        except TempoError as e:
            msg = str(e)
            site = "ok" if re.search(rf"{re.escape(file_stem)}\.py:\d+", msg) else "MISSING"
            bad = [p for p in BAD if re.search(p, msg)]
            print(f"{name}: {type(e).__name__} site={site} bad={bad} | {msg[:400]!r}")
        except Exception as e:  # noqa: BLE001
            tb = traceback.extract_tb(e.__traceback__)[-1]
            print(f"{name}: NON-TEMPO {type(e).__name__}: {str(e)[:200]} "
                  f"@ {tb.filename}:{tb.lineno}")
