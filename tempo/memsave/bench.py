"""Benchmark E8 (BENCHMARKS.md): memsave layers on a Hugging Face BertModel, on CPU.

Per variant (baseline, each technique, all with byte and with bit masks): saved-for-backward
bytes per layer (hooks, by unique storage, next to the closed form), peak RSS, the largest batch
under an address-space cap and step time (each in a fresh subprocess), and the largest gradient
difference to the unconverted model after one step (dropout off).
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import os
import platform
import time
from typing import Any, TypedDict

import torch

from tempo.memsave.closed_form import LayerShape, layer_bytes

ALL = ("gelu", "layernorm", "attention")
VARIANTS: list[tuple[str, tuple[str, ...], str]] = [
    ("baseline", (), "byte"),
    ("gelu", ("gelu",), "byte"),
    ("layernorm", ("layernorm",), "byte"),
    ("attention", ("attention",), "byte"),
    ("all-byte", ALL, "byte"),
    ("all-bit", ALL, "bit"),
]

class Sizes(TypedDict):
    """Model and search sizes of one E8 run (ints stay ints: they are shapes and counts)."""

    hidden: int
    heads: int
    seq: int
    layers: int
    batch: int
    cap_mib: float
    repeats: int
    max_batch: int


FULL = Sizes(
    hidden=768, heads=12, seq=128, layers=2, batch=4, cap_mib=256.0, repeats=3, max_batch=64
)
QUICK = Sizes(hidden=32, heads=2, seq=16, layers=2, batch=2, cap_mib=32.0, repeats=3, max_batch=8)


def max_grad_diff(cfg: Sizes, techniques: tuple[str, ...], mask_format: str) -> float:
    """Largest |grad| difference to the unconverted BertModel after one step, dropout off."""
    from tempo.memsave.convert import convert
    from tempo.memsave.probe import build_bert, inputs, train_step

    if not techniques:
        return 0.0
    base = build_bert(cfg["hidden"], cfg["heads"], cfg["layers"], dropout=0.0)
    conv = copy.deepcopy(base)
    convert(conv, techniques, mask_format=mask_format)
    ids = inputs(2, cfg["seq"])
    for m in (base, conv):
        train_step(m, ids)
    return max(
        (a.grad - b.grad).abs().max().item()
        for a, b in zip(base.parameters(), conv.parameters())
        if a.grad is not None and b.grad is not None
    )


def inprocess_step_time(cfg: Sizes, techniques: tuple[str, ...], fmt: str) -> float:
    """Median time of one training step in this process (one warm-up step first)."""
    import statistics

    from tempo.memsave.probe import build_bert, inputs, train_step

    model = build_bert(cfg["hidden"], cfg["heads"], cfg["layers"], techniques, fmt)
    ids = inputs(cfg["batch"], cfg["seq"])
    train_step(model, ids)
    times = []
    for _ in range(cfg["repeats"]):
        t0 = time.perf_counter()
        train_step(model, ids)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def plot_rows(rows: list[dict[str, Any]], plots: str) -> list[str]:
    """One bar chart (from zero) per measure of the E8 rows, written into `plots`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(plots, exist_ok=True)
    names = [r["variant"] for r in rows]
    made = []
    for key, label, fname in [
        ("saved_bytes_per_layer", "saved-for-backward bytes / layer (MiB)", "e8_saved_bytes.png"),
        ("max_batch", "largest batch under cap", "e8_max_batch.png"),
        ("peak_minus_base_mib", "peak RSS over base (MiB)", "e8_peak_rss.png"),
        ("step_s_median", "step time (s, median)", "e8_step_time.png"),
    ]:
        got = [r.get(key) for r in rows]
        if not any(isinstance(v, int | float) for v in got):
            continue  # this run did not take this measure (e.g. --quick): no empty chart
        vals = [float(v) if isinstance(v, int | float) else 0.0 for v in got]
        if key == "saved_bytes_per_layer":
            vals = [v / 2**20 for v in vals]
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.bar(names, vals, color=["#888"] + ["#3a7"] * (len(names) - 1))
        ax.set_ylim(bottom=0)
        for i, r in enumerate(rows):
            if "error" in r:
                label_text = "OOM" if "alloc" in str(r["error"]).lower() else "MISSING"
            elif not isinstance(got[i], int | float):
                label_text = "not measured"
            else:
                continue
            ax.text(i, 0, label_text, rotation=90, color="red", ha="center", va="bottom")
        ax.set_ylabel(label)
        ax.set_title(f"E8 memsave: {label}")
        fig.tight_layout()
        path = os.path.join(plots, fname)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        made.append(path)
    return made


def run_e8(results_dir: str, quick: bool = False, plots_dir: str | None = "") -> dict:
    """Run E8 and write ``e8_memsave.csv``, ``e8_memsave.json`` and the plots into
    `plots_dir` (default ``<results_dir>/plots``; None: no plots, the caller draws them)."""
    from tqdm import tqdm

    from tempo.memsave.probe import layer_saved_bytes, run_probe

    cfg = QUICK if quick else FULL
    os.makedirs(results_dir, exist_ok=True)
    rows: list[dict[str, Any]] = []
    shape = LayerShape(1, cfg["seq"], cfg["hidden"], cfg["heads"], 4 * cfg["hidden"])
    for name, techniques, fmt in tqdm(VARIANTS, desc="E8 memsave", unit="variant"):
        row: dict[str, Any] = {"variant": name, "mask_format": fmt}
        row.update({k: v for k, v in cfg.items() if k != "max_batch"})
        row["max_batch_limit"] = cfg["max_batch"]
        row["saved_bytes_per_layer"] = layer_saved_bytes(
            cfg["hidden"], cfg["heads"], cfg["seq"], techniques, fmt
        )
        row["closed_form_bytes_per_layer"] = layer_bytes(shape, techniques, fmt)
        row["max_grad_diff"] = max_grad_diff(cfg, techniques, fmt)
        if quick:  # --quick: seconds; no subprocess, no max-batch search, no peak RSS
            if name in ("baseline", "all-bit"):
                row["step_s_median"] = inprocess_step_time(cfg, techniques, fmt)
                row["step_time_source"] = "in-process (--quick), not a fresh subprocess"
            rows.append(row)
            continue
        probe = run_probe(
            mode="all",
            hidden=cfg["hidden"],
            heads=cfg["heads"],
            layers=cfg["layers"],
            seq=cfg["seq"],
            batch=cfg["batch"],
            cap_mib=cfg["cap_mib"],
            repeats=cfg["repeats"],
            max_batch=cfg["max_batch"],
            techniques=",".join(techniques),
            mask_format=fmt,
            bool_masks=True,
        )
        probe.pop("step_s_all", None)
        probe.pop("techniques", None)
        row.update(probe)
        rows.append(row)
    base = rows[0]
    for r in rows:
        if base.get("step_s_median") and r.get("step_s_median"):
            r["step_time_ratio"] = r["step_s_median"] / base["step_s_median"]
        if base.get("max_batch") and r.get("max_batch"):
            r["max_batch_ratio"] = r["max_batch"] / base["max_batch"]
        r["saved_bytes_ratio"] = r["saved_bytes_per_layer"] / base["saved_bytes_per_layer"]
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    csv_path = os.path.join(results_dir, "e8_memsave.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    if plots_dir == "":
        plots_dir = os.path.join(results_dir, "plots")
    plots = plot_rows(rows, plots_dir) if plots_dir is not None else []
    summary = {
        "experiment": "E8",
        "config": cfg,
        "quick": quick,
        "machine": f"{platform.machine()} {os.cpu_count()} cores, torch {torch.__version__}",
        "dropout_baseline": "bool-mask dropout (torch.native_dropout), as saved on GPU",
        "claim": "paper: up to 2x larger batch, up to 16% higher throughput (BERT-large, GPU)",
        "held_bytes_equal_closed_form": all(
            r["saved_bytes_per_layer"] == r["closed_form_bytes_per_layer"] for r in rows
        ),
        "rows": rows,
        "csv": csv_path,
        "plots": plots,
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with open(os.path.join(results_dir, "e8_memsave.json"), "w") as f:
        json.dump(summary, f, indent=2, default=str)
    return summary


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Benchmark E8: tempo.memsave on a HF BertModel (CPU).")
    ap.add_argument("--quick", action="store_true", help="tiny config, seconds")
    ap.add_argument("--results", default="results/memsave", help="output directory")
    args = ap.parse_args(argv)
    summary = run_e8(args.results, quick=args.quick)
    for r in summary["rows"]:
        print(
            f"{r['variant']:>10}  bytes/layer {r['saved_bytes_per_layer'] / 2**20:8.3f} MiB"
            f"  max_batch {r.get('max_batch')}  peak {r.get('peak_minus_base_mib', 0):.1f} MiB"
            f"  step {r.get('step_s_median', float('nan')):.3f} s  dgrad {r['max_grad_diff']:.2e}"
        )


if __name__ == "__main__":
    main()
