"""`results/REPORT.md`: per experiment the measured values, ratios side by side, the claim each
table tests and whether it held (claims involving a MISSING system read "not tested")."""

from __future__ import annotations

import platform
import statistics
import time
from pathlib import Path
from typing import Any

import psutil

from tempo.bench.experiments.common import TableSpec, agreeing, fmt
from tempo.bench.plots import PLOT_FILES
from tempo.bench.registry import Experiment
from tempo.bench.results import Record, load_records

Cell = float | str


def build_table(spec: TableSpec, records: list[Record], metric: str | None = None,
                scale: float | None = None) -> dict[str, dict[str, Cell]]:
    """rows -> system -> scaled value, or the label OOM / MISSING. Repeated runs of one
    point (e.g. E4c's three compiles per depth) give the median of their values."""
    metric, scale = metric or spec.metric, spec.scale if scale is None else scale
    tab: dict[str, dict[str, Cell]] = {}
    runs: dict[tuple[str, str], list[float]] = {}
    for r in records:
        key = spec.row(r.point.cfg)
        row = tab.setdefault(key, {})
        v = r.get(metric) if r.status == "ok" else None
        if v is None:
            row.setdefault(r.point.system.name, r.status if r.status != "ok" else "–")
            continue
        vals = runs.setdefault((key, r.point.system.name), [])
        vals.append(float(v) * scale)
        row[r.point.system.name] = statistics.median(vals)
    return tab


def _markdown(tab: dict[str, dict[str, Cell]], systems: list[str],
              ratios: tuple[tuple[str, str], ...],
              bounds: dict[tuple[str, str], tuple[float, ...]] | None = None) -> list[str]:
    """The table; a ratio cell prints the digits its claim's bounds need (`bounds`), so it
    reads the same as the verdict below it."""
    head = ["point", *systems, *[f"{a}/{b}" for a, b in ratios]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row, vals in tab.items():
        cells = [row]
        for s in systems:
            v = vals.get(s, "–")  # "–": this system has no point in this row
            cells.append(fmt(v) if isinstance(v, float) else str(v))
        for a, b in ratios:
            va, vb = vals.get(a), vals.get(b)
            if isinstance(va, float) and isinstance(vb, float) and vb > 0:
                r = va / vb
                cells.append(f"{agreeing(r, (bounds or {}).get((a, b), ()))}x")
            else:
                cells.append("n/a")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _missing_notes(records: list[Record]) -> list[str]:
    seen: dict[str, str] = {}
    for r in records:
        if r.status == "MISSING" and r.reason:
            seen.setdefault(r.point.system.name, r.reason)
    return [f"- `{s}` MISSING: {why}" for s, why in seen.items()]


def _has_data(r: Record) -> bool:
    return r.status in ("ok", "OOM")


def _plot_links(exp: Experiment, root: Path) -> list[str]:
    """Markdown links to the experiment's plots that exist under `root/plots`."""
    files = [f for f in PLOT_FILES.get(exp.name, ()) if (root / "plots" / f).exists()]
    return [f"![{exp.title}: {Path(f).stem}](plots/{f})" for f in files] + ([""] if files else [])


def _no_data_line(records: list[Record]) -> str:
    """One line saying why an experiment has no numbers (instead of an empty table)."""
    why = sorted({r.reason or r.status for r in records})
    return "*No measurements:* " + ("; ".join(why) if why else "no points in this grid") + "."


def experiment_section(exp: Experiment, root: Path, quick: bool) -> str:
    """Markdown section for one experiment: its table(s) with numbers, its verdicts, its plots
    linked below; or one line saying why there are no numbers."""
    records = load_records(root, exp.grid(quick))
    out = [f"## {exp.title}", "", f"*Claim tested:* {exp.claim}", ""]
    if not any(_has_data(r) for r in records):
        return "\n".join([*out, _no_data_line(records), ""])
    spec: TableSpec | None = exp.extra.get("table")
    if spec is None:
        custom = exp.extra.get("report")
        body = custom(records) if custom is not None else [
            f"- `{r.point.rel_dir}`: {r.status}" for r in records]
        return "\n".join([*out, *body, "", *_plot_links(exp, root)])
    loads = [v for r in records if (v := r.get("loadavg_1min_start")) is not None]
    if loads:  # the machine is shared: say how loaded it was while these points ran
        out += [f"*Machine load:* 1-min load average {min(loads):.1f}–{max(loads):.1f} at the "
                f"start of the {len(loads)} measured points (2 cores).", ""]
    measured = [r for r in records if _has_data(r)]
    systems = [s.name for s in exp.systems if any(r.point.system is s for r in measured)]
    ratios = tuple((a, b) for a, b in spec.ratios if a in systems and b in systems)
    rows = {spec.row(r.point.cfg) for r in measured}  # rows where some system has a number
    tab = {k: v for k, v in build_table(spec, records).items() if k in rows}
    out.append(f"**{spec.metric}** ({spec.unit}); ratios are row-wise quotients of this metric.")
    claimed = {c.ratio[:2]: c.ratio[2] for c in spec.checks if hasattr(c, "ratio")}
    out += ["", *_markdown(tab, systems, ratios, claimed), ""]
    for metric, label, scale in spec.extra_metrics:
        extra = {k: v for k, v in build_table(spec, records, metric, scale).items()
                 if k in rows}
        if any(isinstance(v, float) for row in extra.values() for v in row.values()):
            out += [f"**{label}**", "", *_markdown(extra, systems, ()), ""]
    if spec.memory_note:
        out += [f"*Memory measure:* {spec.memory_note}", ""]
    if spec.checks:
        out.append("| claim | verdict |")
        out.append("|---|---|")
        for check in spec.checks:
            claim, verdict = check(tab)
            out.append(f"| {claim} | {verdict} |")
        out.append("")
    out += _plot_links(exp, root)
    out += _missing_notes(records)
    oom = [r.point.rel_dir.rsplit("/", 1)[-1] for r in records if r.status == "OOM"]
    if oom:
        out.append(f"- OOM points: {', '.join(oom)}")
    return "\n".join(out) + "\n"


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {"cpu": platform.processor() or platform.machine(),
            "cores": psutil.cpu_count(), "ram_gib": round(psutil.virtual_memory().total / 2**30),
            "python": platform.python_version(), "platform": platform.platform()}


def write_report(root: Path, exps: list[Experiment], quick: bool) -> Path:
    """Write REPORT.md under `root` and return its path."""
    m = machine()
    parts = [
        "# Tempo benchmark report", "",
        f"Generated {time.strftime('%Y-%m-%d %H:%M')} from `{root}` "
        f"({'--quick' if quick else 'full'} grids) on {m['cores']} cores / {m['ram_gib']} GiB, "
        f"{m['platform']}, Python {m['python']}. Each system ran in its own process with "
        "2 threads. Ratios are Tempo vs each baseline (and baseline vs baseline) in the same run;"
        " a ratio against a MISSING/OOM point is n/a.", ""]
    from tempo.bench.compile_bench import section as compile_section

    parts.append(compile_section(root))
    for e in exps:
        parts.append(experiment_section(e, root, quick))
    path = root / "REPORT.md"
    root.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts))
    return path
