"""PNG plots per experiment under `plots/`; every figure names the measure it shows."""

from __future__ import annotations

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tempo.bench.experiments.common import MIB  # noqa: E402
from tempo.bench.registry import Experiment  # noqa: E402
from tempo.bench.results import Record, load_records  # noqa: E402


def _series(records: list[Record], key: str, metric: str, scale: float,
            group: tuple[str, ...]) -> dict[tuple, dict[str, list[tuple[float, float | str]]]]:
    """group-values -> system -> [(x, value or 'OOM'/'MISSING')]."""
    out: dict[tuple, dict[str, list[tuple[float, float | str]]]] = {}
    for r in records:
        g = tuple(r.point.cfg.get(k) for k in group)
        v = r.get(metric) if r.status == "ok" else None
        val: float | str = v * scale if v is not None else r.status
        out.setdefault(g, {}).setdefault(r.point.system.name, []).append(
            (float(r.point.cfg[key]), val))
    return out


def line_plot(exp: Experiment, records: list[Record], path: Path, x: str, metric: str,
              scale: float, ylabel: str, group: tuple[str, ...], logx: bool = True) -> Path | None:
    """One panel per group, one line per system; OOM points drawn as red 'OOM' text."""
    series = _series(records, x, metric, scale, group)
    if not any(isinstance(v, float) for g in series.values() for s in g.values() for _, v in s):
        return None
    fig, axes = plt.subplots(1, len(series), figsize=(5 * len(series), 4), squeeze=False)
    for ax, (g, by_sys) in zip(axes[0], series.items()):
        for sysname, pts in by_sys.items():
            ok = [(a, b) for a, b in pts if isinstance(b, float)]
            if ok:
                ax.plot(*zip(*ok), marker="o", label=sysname)
            for a, b in pts:
                if b == "OOM":
                    ax.annotate(f"OOM\n{sysname}", (a, 0), xycoords=("data", "axes fraction"),
                                color="red", rotation=90, fontsize=7, ha="center", va="bottom")
        if logx:
            ax.set_xscale("log", base=2)
        ax.set_title(", ".join(f"{k}={v}" for k, v in zip(group, g)))
        ax.set_xlabel(x)
        ax.set_ylabel(ylabel)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(exp.title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def mem_timeline_plot(exp: Experiment, root: Path, records: list[Record], path: Path
                      ) -> Path | None:
    """Accountant live bytes vs decode progress (E3)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), squeeze=False)
    drawn = False
    for ax, attn in zip(axes[0], ("causal", "window")):
        for r in records:
            f = root / r.point.rel_dir / "mem_timeline.csv"
            if r.point.cfg.get("attn") != attn or r.status != "ok" or not f.exists():
                continue
            with open(f) as fh:
                rows = list(csv.DictReader(fh))
            if not rows:
                continue
            n = max(int(rows[-1]["step"]), 1)
            ax.plot([100 * int(x["step"]) / n for x in rows],
                    [int(x["live_bytes"]) / MIB for x in rows],
                    label=r.point.system.name, drawstyle="steps-post")
            drawn = True
        ax.set_title(f"{attn}: virtual-device accountant (live MiB)")
        ax.set_xlabel("decode progress (%)")
        ax.set_ylabel("live device MiB")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    if not drawn:
        plt.close(fig)
        return None
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def bar_plot(exp: Experiment, records: list[Record], path: Path, metric: str, ylabel: str,
             scale: float = 1.0) -> Path | None:
    """Grouped bars per sweep point, from zero (a bar's length is its value), OOM as red
    text (RL experiments)."""
    spec = exp.extra["table"]
    rows: dict[str, dict[str, float | str]] = {}
    for r in records:
        v = r.get(metric) if r.status == "ok" else None
        rows.setdefault(spec.row(r.point.cfg), {})[r.point.system.name] = (
            v * scale if v is not None else r.status)
    systems = sorted({s for v in rows.values() for s, x in v.items() if x != "MISSING"})
    if not systems:
        return None
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(rows)), 4))
    w = 0.8 / len(systems)
    for i, s in enumerate(systems):
        for j, vals in enumerate(rows.values()):
            cell = vals.get(s)
            xpos = j + i * w
            if isinstance(cell, float):
                ax.bar(xpos, cell, w, color=f"C{i}", label=s if j == 0 else None)
            elif cell == "OOM":
                ax.text(xpos, 0.02, "OOM", color="red", rotation=90, fontsize=7,
                        transform=ax.get_xaxis_transform())
    ax.set_xticks([j + 0.4 - w / 2 for j in range(len(rows))], list(rows), rotation=30,
                  fontsize=7)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(ylabel)
    ax.set_title(exp.title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def memsave_plots(records: list[Record], plots: Path) -> list[Path]:
    """E8's bar charts, drawn from the point's summary rows into `plots/memsave/`."""
    from tempo.memsave.bench import plot_rows

    rows = next((r.summary.get("rows") for r in records if r.status == "ok"), None)
    if not rows:
        return []
    return [Path(p) for p in plot_rows(rows, str(plots / "memsave"))]


# Every plot file of each experiment, relative to the plots directory (the report links
# these under the experiment's table when they exist).
PLOT_FILES: dict[str, tuple[str, ...]] = {
    "gpt2_tpt": ("gpt2_decode/tpt.png",),
    "llama_tpt": ("llama32_decode/tpt.png",),
    "gpt2_mem": ("gpt2_decode/mem_usage.png",),
    "ppo_small_to_med": ("rl_train/small_to_med_scale.png",),
    "ppo_large_obs": ("rl_train/large_obs.png", "rl_train/large_obs_device_mem.png"),
    "memsave": ("memsave/e8_saved_bytes.png", "memsave/e8_max_batch.png",
                "memsave/e8_peak_rss.png", "memsave/e8_step_time.png"),
}


def plot_experiment(exp: Experiment, root: Path, plots: Path, quick: bool) -> list[Path]:
    """All plots of one experiment (none when no system produced numbers)."""
    recs = load_records(root, exp.grid(quick))
    made: list[Path | None] = []
    files = [plots / f for f in PLOT_FILES.get(exp.name, ())]
    if exp.name == "gpt2_tpt":
        made.append(line_plot(exp, recs, files[0], "seq_len", "tpt", 1e3,
                              "time per token (ms)", ("attn",)))
    elif exp.name == "llama_tpt":
        made.append(line_plot(exp, recs, files[0], "seq_len", "tpt", 1e3,
                              "mean time between tokens (ms)", ("attn", "batch")))
    elif exp.name == "gpt2_mem":
        made.append(mem_timeline_plot(exp, root, recs, files[0]))
    elif exp.name == "ppo_small_to_med":
        made.append(bar_plot(exp, recs, files[0], "iter_mean", "iteration time (s)"))
    elif exp.name == "ppo_large_obs":
        made.append(bar_plot(exp, recs, files[0], "iter_mean", "iteration time (s)"))
        made.append(bar_plot(exp, recs, files[1], "peak_device_bytes",
                             "accountant peak device memory (MiB)", 1 / MIB))
    elif exp.name == "memsave":
        made += memsave_plots(recs, plots)
    return [p for p in made if p is not None]
