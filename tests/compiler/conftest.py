"""Compiler tests reuse the program runner of tests/core (`programs.run_once`)."""

from __future__ import annotations

import sys
from pathlib import Path

_CORE = str(Path(__file__).resolve().parents[1] / "core")
if _CORE not in sys.path:
    sys.path.insert(0, _CORE)
