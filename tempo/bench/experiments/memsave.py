"""E8 (tempo.memsave): delegated to `tempo.memsave.bench.run_e8`, which owns its own grid."""

from __future__ import annotations

import importlib.util
from typing import Any

from tempo.bench.experiments.common import TableSpec, agreeing, points
from tempo.bench.registry import Experiment, Point, System, register


def _missing() -> str | None:
    try:
        found = importlib.util.find_spec("tempo.memsave.bench") is not None
    except (ImportError, ValueError):
        found = False
    return None if found else "tempo.memsave.bench.run_e8 not available yet"


class _MemsaveSystem(System):
    """Resolves availability at run time, so the entry works as soon as the module lands."""

    def missing_reason(self, cfg: dict | None = None) -> str | None:
        return _missing()


MEMSAVE = _MemsaveSystem("memsave", "tempo.bench.experiments.memsave:run_point", "custom")


def run_point(out_dir: str, quick: bool) -> dict:
    """The worker's entry: E8 without its own plots; the bench draws them under
    `<results>/plots/memsave/` from the summary rows, next to the other experiments'."""
    from tempo.memsave.bench import run_e8

    return run_e8(out_dir, quick, plots_dir=None)


GRAD_TOL = 1e-5  # largest |grad| difference that still counts as "the gradients match"
COLUMNS = (  # (row key, header, format)
    ("mask_format", "masks", str),
    ("saved_bytes_per_layer", "saved MiB / layer", lambda v: f"{v / 2**20:.4f}"),
    ("saved_bytes_ratio", "vs baseline", lambda v: f"{v:.2f}x"),
    ("max_grad_diff", "max abs grad diff", lambda v: f"{v:.1e}"),
    ("step_s_median", "step (ms, median)", lambda v: f"{1e3 * v:.1f}"),
    ("max_batch", "max batch under cap", str),
    ("peak_minus_base_mib", "peak RSS over base (MiB)", lambda v: f"{v:.1f}"),
)


def report_lines(records: list[Any]) -> list[str]:
    """E8's table (one row per variant, only the measures this run took) and verdicts."""
    rec = next(r for r in records if r.status == "ok")
    rows: list[dict[str, Any]] = rec.summary.get("rows", [])
    cols = [c for c in COLUMNS if any(r.get(c[0]) is not None for r in rows)]
    out = ["| variant | " + " | ".join(h for _, h, _ in cols) + " |",
           "|---|" + "---|" * len(cols)]
    for r in rows:
        cells = [fn(r[k]) if r.get(k) is not None else "–" for k, _, fn in cols]
        out.append(f"| {r['variant']} | " + " | ".join(cells) + " |")
    out += ["", "| claim | verdict |", "|---|---|"]
    converted = [r for r in rows if r["variant"] != "baseline"]
    ratios = [r["saved_bytes_ratio"] for r in converted]
    worst = agreeing(max(ratios), (1.0,)) if ratios else "n/a"
    out.append(f"| every converted variant keeps fewer bytes for backward | "
               f"{'held' if ratios and max(ratios) < 1 else 'did not hold'} — largest ratio "
               f"{worst}x |")
    held = rec.summary.get("held_bytes_equal_closed_form")
    out.append(f"| saved bytes equal the closed form | {'held' if held else 'did not hold'} |")
    diff = max((r["max_grad_diff"] for r in converted), default=0.0)
    out.append(f"| gradients match the unconverted model (max abs diff <= {GRAD_TOL:g}) | "
               f"{'held' if diff <= GRAD_TOL else 'did not hold'} — {diff:.1e} |")
    batch = [float(r["max_batch_ratio"]) for r in converted if r.get("max_batch_ratio")]
    verdict = (("held" if max(batch) > 1 else "did not hold") + f" — up to "
               f"{agreeing(max(batch), (1.0,))}x" if batch
               else "not tested (--quick skips the max-batch search)")
    out.append(f"| a converted model fits a larger batch under the cap | {verdict} |")
    cfg = rec.summary.get("config", {})
    if cfg:
        out += ["", "*Model:* BertModel " + ", ".join(f"{k}={v}" for k, v in cfg.items()) + "."]
    return out


def _grid(quick: bool) -> list[Point]:
    return points("memsave", [MEMSAVE], [{}], lambda s, c: "memsave/run")


register(Experiment(
    "memsave", "E8 — memory-footprint reduction layers (tempo.memsave)",
    "The converted BERT keeps fewer bytes for backward, fits a larger batch under a fixed cap, "
    "and its gradients match the unconverted model.",
    [MEMSAVE], _grid, aliases=("e8",), timeout_s=1500,
    extra={"table": None, "report": report_lines}))


__all__ = ["TableSpec"]
