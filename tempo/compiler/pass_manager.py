"""The pass manager: runs passes (each `run(sdg, cfg) -> sdg`, switched by its
ExecutionConfig flag), iterates the clean-up group to a fixpoint, validates the graph
between passes when `validate_pipeline_stages` is set, writes the graph after every pass
that changed it when `visualize_pipeline_stages` and `visualize_debug_stages` are both set,
and times every pass for `executor.compile_profile()`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tempo.core.configs import ExecutionConfig
from tempo.core.sdg import SDG
from tempo.core.sdg_validate import problems

PassFn = Callable[[SDG, ExecutionConfig], SDG]
StageReport = Callable[[str, float, str], None]


class PassValidationError(RuntimeError):
    """A pass left the graph inconsistent: a compiler bug, named by the pass."""


@dataclass(frozen=True)
class Pass:
    """One graph rewrite; `flag` names the ExecutionConfig field that switches it (None:
    always runs, because later stages need it for correctness)."""

    name: str
    run: PassFn
    flag: str | None = None
    also: tuple[str, ...] = ()  # further flags that must all be on as well

    def enabled(self, cfg: ExecutionConfig) -> bool:
        flags = ((self.flag,) if self.flag else ()) + self.also
        return all(bool(getattr(cfg, f)) for f in flags)


class PassManager:
    """Runs passes on one graph, accumulating per-pass milliseconds in `profile`
    (key `pass:<name>`) and reporting each stage to `report(stage, ms, note)`."""

    def __init__(self, cfg: ExecutionConfig, profile: dict[str, float] | None = None,
                 report: StageReport | None = None, max_rounds: int = 20) -> None:
        self.cfg = cfg
        self.profile: dict[str, float] = {} if profile is None else profile
        self.report = report
        self.max_rounds = max_rounds
        self.stages_written = 0

    def dump(self, sdg: SDG, name: str, version: int) -> None:
        """With both visualisation flags, the graph after pass `name` as
        `<path>/sdg_pass_<k>_<name>.dot` when the pass changed it (`version` before it);
        an unwritable path loses the file, not the compile."""
        cfg = self.cfg
        if not (cfg.visualize_pipeline_stages and cfg.visualize_debug_stages):
            return
        if sdg.version == version:
            return
        self.stages_written += 1
        try:
            os.makedirs(cfg.path, exist_ok=True)
            out = os.path.join(cfg.path, f"sdg_pass_{self.stages_written:02d}_{name}.dot")
            with open(out, "w") as f:
                f.write(sdg.to_dot())
        except OSError:
            pass

    def check(self, sdg: SDG, after: str, everything: bool = False) -> None:
        """Raise PassValidationError naming `after` when the graph is inconsistent: the
        whole graph, or what changed since the last check (ops checked need not be
        checked again: passes only touch what they rewrite, through the SDG helpers)."""
        changed = sdg.take_changed()
        if not self.cfg.validate_pipeline_stages or (not changed and not everything):
            return
        t = time.perf_counter()
        found = problems(sdg, only=None if everything else changed)
        self._add("validate", t)
        if found:
            lines = "\n  ".join(found)
            raise PassValidationError(f"the graph is inconsistent after {after}:\n  {lines}")

    def run(self, p: Pass, sdg: SDG) -> SDG:
        """Run one pass if its flag is on; validate after it."""
        if not p.enabled(self.cfg):
            return sdg
        before, t, version = len(sdg.ops), time.perf_counter(), sdg.version
        sdg = p.run(sdg, self.cfg)
        ms = self._add(f"pass:{p.name}", t)
        self.check(sdg, f"pass '{p.name}'")
        self.dump(sdg, p.name, version)
        if self.report is not None:
            self.report(p.name, ms, _ops_note(before, len(sdg.ops)))
        return sdg

    def fixpoint(self, name: str, group: Sequence[Pass], sdg: SDG) -> SDG:
        """Run the enabled passes of `group` in order, again and again, until a whole
        round leaves the graph unchanged (or `max_rounds` rounds have run)."""
        active = [p for p in group if p.enabled(self.cfg)]
        before, t0 = len(sdg.ops), time.perf_counter()
        spent = {p.name: 0.0 for p in active}
        rounds = 0
        for rounds in range(1, self.max_rounds + 1):  # noqa: B007 - reported below
            start = sdg.version
            for p in active:
                t, version = time.perf_counter(), sdg.version
                sdg = p.run(sdg, self.cfg)
                spent[p.name] += self._add(f"pass:{p.name}", t)
                self.check(sdg, f"pass '{p.name}' (round {rounds} of {name})")
                self.dump(sdg, p.name, version)
            if sdg.version == start:
                break
        if self.report is not None and active:
            each = ", ".join(f"{n} {ms:.0f} ms" for n, ms in spent.items())
            note = f"{rounds} rounds: {each}; {_ops_note(before, len(sdg.ops))}"
            self.report(name, (time.perf_counter() - t0) * 1e3, note)
        return sdg

    def _add(self, key: str, t: float) -> float:
        ms = (time.perf_counter() - t) * 1e3
        self.profile[key] = self.profile.get(key, 0.0) + ms
        return ms


def _ops_note(before: int, after: int) -> str:
    return f"{before} ops" if before == after else f"{before} -> {after} ops"
