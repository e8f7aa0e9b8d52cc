"""Swap stock layers of any ``nn.Module`` for the memsave ones, and report what changed.

Conversion keeps the Parameter objects (so optimizers and checkpoints stay valid), eps and the GELU
form, and is idempotent. ``auto=True`` converts a deep copy per candidate technique set, measures
the largest batch under a memory budget, and keeps the smallest set that reaches the best batch.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from torch import nn

from tempo.memsave import hf_attention
from tempo.memsave.gelu import InplaceGELU
from tempo.memsave.layernorm import InplaceLayerNorm

TECHNIQUES: tuple[str, ...] = ("gelu", "layernorm", "attention")

# Hugging Face activation classes by name (transformers is optional): erf form vs tanh form.
_HF_GELU_ERF = {"GELUActivation"}
_HF_GELU_TANH = {
    "NewGELUActivation",
    "GELUTanh",
    "PytorchGELUTanh",
    "FastGELUActivation",
    "AccurateGELUActivation",
}


@dataclass(frozen=True)
class Change:
    """One converted (or skipped) module."""

    path: str
    technique: str
    before: str
    after: str


@dataclass
class ConversionReport:
    """What :func:`convert` changed; ``auto`` holds the measured batch sizes when auto=True."""

    changed: list[Change] = field(default_factory=list)
    skipped: list[Change] = field(default_factory=list)
    techniques: tuple[str, ...] = ()
    auto: dict[str, int] = field(default_factory=dict)

    def count(self, technique: str) -> int:
        return sum(1 for c in self.changed if c.technique == technique)

    def __str__(self) -> str:
        counts = ", ".join(f"{t}: {self.count(t)}" for t in TECHNIQUES)
        lines = [f"memsave conversion ({counts}; skipped {len(self.skipped)})"]
        lines += [f"  {c.path}: {c.before} -> {c.after}" for c in self.changed]
        lines += [f"  skipped {c.path}: {c.after}" for c in self.skipped]
        if self.auto:
            lines.append(f"  auto max batch: {self.auto}")
        return "\n".join(lines)


def _gelu_form(module: nn.Module) -> str | None:
    if isinstance(module, InplaceGELU):
        return None
    if type(module) is nn.GELU:
        return module.approximate
    name = type(module).__name__
    if type(module).__module__.startswith("transformers"):
        if name in _HF_GELU_ERF:
            return "none"
        if name in _HF_GELU_TANH:
            return "tanh"
    return None


def _replacement(
    module: nn.Module, techniques: set[str], mask_format: str
) -> tuple[str, nn.Module] | None:
    if "gelu" in techniques:
        form = _gelu_form(module)
        if form is not None:
            new = InplaceGELU(form, mask_format)
            new.train(module.training)
            return "gelu", new
    if "layernorm" in techniques and type(module) is nn.LayerNorm:
        return "layernorm", InplaceLayerNorm.from_layer_norm(module)
    return None


def _validate(techniques: Iterable[str]) -> set[str]:
    chosen = set(techniques)
    unknown = chosen - set(TECHNIQUES)
    if unknown:
        raise ValueError(f"unknown techniques {sorted(unknown)}; choose from {TECHNIQUES}")
    return chosen


def convert_modules(
    model: nn.Module, techniques: Iterable[str] = TECHNIQUES, mask_format: str = "bit"
) -> ConversionReport:
    """Replace modules in place (no measuring); see :func:`convert`."""
    chosen = _validate(techniques)
    report = ConversionReport(techniques=tuple(t for t in TECHNIQUES if t in chosen))
    for parent_name, parent in list(model.named_modules()):
        for name, child in list(parent.named_children()):
            path = f"{parent_name}.{name}" if parent_name else name
            found = _replacement(child, chosen, mask_format)
            if found is not None:
                technique, new = found
                setattr(parent, name, new)
                report.changed.append(
                    Change(path, technique, type(child).__name__, type(new).__name__)
                )
            elif "attention" in chosen and hf_attention.is_hf_attention(child):
                reason = hf_attention.convertible(child)
                if reason is None:
                    hf_attention.convert_attention(child, mask_format)
                    report.changed.append(
                        Change(path, "attention", "eager", hf_attention.IMPLEMENTATION)
                    )
                elif reason != "already converted":
                    report.skipped.append(Change(path, "attention", type(child).__name__, reason))
    return report


def convert(
    model: nn.Module,
    techniques: Iterable[str] = TECHNIQUES,
    auto: bool = False,
    *,
    mask_format: str = "bit",
    fits: Callable[[nn.Module, int], bool] | None = None,
    max_batch: int = 1024,
    gelu: bool | None = None,
    layernorm: bool | None = None,
    attention: bool | None = None,
    pattern: str = "auto",
) -> ConversionReport:
    """Convert ``model`` in place and return a report of the modules changed.

    ``gelu=``/``layernorm=``/``attention=`` switch one technique on or off (MEMSAVE.md 5's
    ``convert(model, gelu=True, layernorm=True, attention=True, pattern="auto")``; the
    attention pattern is always found automatically). With ``auto=True``,
    ``fits(candidate_model, batch)`` must run one training step and return
    whether it fit the memory budget (e.g. :func:`tempo.memsave.memory.fits_under_cap`).
    Each candidate set (none, each technique alone, all of ``techniques``) is tried on a deep
    copy; the smallest set reaching the largest batch is applied to ``model``.
    """
    if pattern != "auto":
        raise ValueError(f"pattern={pattern!r}: only 'auto' (HF attention found by its module)"
                         " is supported")
    picked = _validate(techniques)
    for name, on in (("gelu", gelu), ("layernorm", layernorm), ("attention", attention)):
        if on is not None:
            picked = picked | {name} if on else picked - {name}
    chosen = [t for t in TECHNIQUES if t in picked]
    if not auto:
        return convert_modules(model, chosen, mask_format)
    if fits is None:
        raise ValueError("auto=True needs fits(model, batch) -> bool")
    from tempo.memsave.memory import largest_batch

    candidates: list[tuple[str, ...]] = [(), *[(t,) for t in chosen]]
    if len(chosen) > 1:
        candidates.append(tuple(chosen))
    batches: dict[str, int] = {}
    for cand in candidates:
        trial = copy.deepcopy(model)
        convert_modules(trial, cand, mask_format)
        batches["+".join(cand) or "baseline"] = largest_batch(
            functools.partial(fits, trial), limit=max_batch
        )
        del trial
    best = max(batches.values())
    pick = min((c for c in candidates if batches["+".join(c) or "baseline"] == best), key=len)
    report = convert_modules(model, pick, mask_format)
    report.auto = batches
    return report
