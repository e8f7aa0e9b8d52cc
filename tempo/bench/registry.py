"""Registry of experiments and their systems: adding a system is one `System(...)` line.

A system names its implementation as "module:function" so the harness never imports it; the
worker subprocess does. `missing` marks systems that do not exist yet (e.g. Tempo entries).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

KINDS = ("decode", "rl", "custom")


@dataclass(frozen=True)
class System:
    """One system of one experiment. `kind` says which protocol the worker applies."""

    name: str
    target: str | None
    kind: str = "decode"
    missing: str | None = None
    requires: tuple[str, ...] = ()
    supports: Callable[[dict[str, Any]], str | None] | None = None
    only_base: bool = False  # run only at the experiment's base point (e.g. RLlib)

    def missing_reason(self, cfg: dict[str, Any] | None = None) -> str | None:
        """Why this system cannot run (at this point), or None when it can."""
        if self.missing:
            return self.missing
        for mod in self.requires:
            if importlib.util.find_spec(mod) is None:
                return f"python package {mod!r} is not installed (install the `bench` extra)"
        if cfg is not None and self.supports is not None:
            return self.supports(cfg)
        return None


@dataclass(frozen=True)
class Point:
    """One grid point of one system: where its results go and the config it runs with."""

    experiment: str
    system: System
    rel_dir: str
    cfg: dict[str, Any]


@dataclass
class Experiment:
    """An experiment: grid, systems, claim text, and its report/plot hooks."""

    name: str
    title: str
    claim: str
    systems: list[System]
    grid: Callable[[bool], list[Point]]
    timeout_s: float = 1200.0
    plot: Callable[[str, str], list[str]] | None = None
    report: Callable[[str], str] | None = None
    aliases: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def system(self, name: str) -> System:
        for s in self.systems:
            if s.name == name:
                return s
        raise KeyError(f"experiment {self.name!r} has no system {name!r}")


EXPERIMENTS: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    """Add an experiment to the global registry (idempotent by name)."""
    EXPERIMENTS[exp.name] = exp
    return exp


def load_all() -> dict[str, Experiment]:
    """Import the experiment modules (which register themselves) and return the registry."""
    from tempo.bench.experiments import lm, memsave, rl  # noqa: F401

    return EXPERIMENTS


def resolve(name: str) -> Experiment:
    """Look an experiment up by name or alias (e1, e5, ...)."""
    exps = load_all()
    for e in exps.values():
        if name == e.name or name in e.aliases:
            return e
    raise KeyError(f"unknown experiment {name!r}; known: {', '.join(exps)}")
