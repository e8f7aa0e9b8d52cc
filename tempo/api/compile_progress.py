"""Compile progress: a compile that runs longer than a couple of seconds prints its stages
(one line each, with its time) so a user knows where the time goes; fast compiles stay
silent. Stages finished before the threshold are printed when it is crossed."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class CompileProgress:
    """Collects `done(stage, ms, note)` calls; prints them once `after_s` has passed."""

    def __init__(self, after_s: float = 2.0, stream: TextIO | None = None) -> None:
        self.after_s = after_s
        self.stream = stream
        self.t0 = time.perf_counter()
        self.current = "bounds check"
        self.pending: list[str] = []
        self.shown = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(after_s, self._reveal)
        self._timer.daemon = True
        self._timer.start()

    def start(self, stage: str) -> None:
        """Name the stage now running (shown if the threshold passes during it)."""
        self.current = stage
        with self._lock:
            if self.shown:
                self._write(f"  ... {stage}")
        self._check_time()

    def done(self, stage: str, ms: float, note: str = "") -> None:
        line = f"  {stage:<20} {ms:9.1f} ms" + (f"  ({note})" if note else "")
        with self._lock:
            if self.shown:
                self._write(line)
            else:
                self.pending.append(line)
        self._check_time()

    def __enter__(self) -> CompileProgress:
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        """Stop the timer, whether the compile finished or failed."""
        self._timer.cancel()
        with self._lock:
            if self.shown:
                what = "compiled" if kind is None else "compile failed"
                self._write(f"tempo: {what} after {time.perf_counter() - self.t0:.1f} s")

    def _check_time(self) -> None:
        if not self.shown and time.perf_counter() - self.t0 >= self.after_s:
            self._reveal()

    def _reveal(self) -> None:
        with self._lock:
            if self.shown:
                return
            self.shown = True
            self._write(f"tempo: compiling (more than {self.after_s:.0f} s); stages so far:")
            for line in self.pending:
                self._write(line)
            self.pending.clear()
            self._write(f"  ... {self.current}")

    def _write(self, line: str) -> None:
        out = self.stream if self.stream is not None else sys.stderr
        print(line, file=out, flush=True)
