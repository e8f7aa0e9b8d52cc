"""Measurements behind RESULTS.md: ``python -m tempo.memsave.results [--part bytes|batch|all]``.

Prints markdown tables: saved bytes per BERT layer (measured vs closed form), and per variant the
largest batch under an address-space cap, peak RSS and step time, each in a fresh subprocess.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from tempo.memsave.closed_form import LayerShape, layer_bytes

ALL = ("gelu", "layernorm", "attention")
BYTE_VARIANTS: list[tuple[str, tuple[str, ...], str]] = [
    ("baseline", (), "byte"),
    ("+GELU", ("gelu",), "byte"),
    ("+LN", ("layernorm",), "byte"),
    ("+attention", ("attention",), "byte"),
    ("all (byte masks)", ALL, "byte"),
    ("all (bit masks)", ALL, "bit"),
]
WIDTHS = {"base": (768, 12), "large": (1024, 16)}


def bytes_table(seqs: tuple[int, ...] = (128, 512)) -> list[dict[str, Any]]:
    """Marginal saved bytes per layer (b = 1, fp32, bool-mask dropout) for every variant."""
    from tempo.memsave.probe import layer_saved_bytes

    rows = []
    for width, (hidden, heads) in WIDTHS.items():
        for seq in seqs:
            shape = LayerShape(1, seq, hidden, heads, 4 * hidden)
            for name, techniques, fmt in BYTE_VARIANTS:
                measured = layer_saved_bytes(hidden, heads, seq, techniques, fmt)
                rows.append(
                    dict(width=width, seq=seq, variant=name, measured=measured,
                         closed_form=layer_bytes(shape, techniques, fmt))
                )
    return rows


def batch_table(
    configs: list[dict[str, Any]],
    variants: list[tuple[str, tuple[str, ...], str]] | None = None,
) -> list[dict[str, Any]]:
    """Per config and variant: max batch under the cap, peak RSS and step time (subprocesses)."""
    from tempo.memsave.probe import run_probe

    variants = variants or [BYTE_VARIANTS[0], BYTE_VARIANTS[5]]
    rows = []
    for cfg in configs:
        for name, techniques, fmt in variants:
            t0 = time.time()
            res = run_probe(mode="all", techniques=",".join(techniques), mask_format=fmt,
                            bool_masks=True, **cfg)
            res.pop("techniques", None)
            rows.append(dict(cfg, variant=name, wall_s=round(time.time() - t0, 1), **res))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def step_overhead(
    hidden: int, heads: int, seq: int, batch: int, layers: int = 2, repeats: int = 5
) -> dict[str, Any]:
    """Median fwd+bwd time, baseline vs all (bit), interleaved in one process so that load
    from other processes hits both alike; one torch thread."""
    import statistics

    import torch

    from tempo.memsave import memory
    from tempo.memsave.probe import build_bert, inputs, train_step

    torch.set_num_threads(1)
    ids = inputs(batch, seq)
    models = {"baseline": build_bert(hidden, heads, layers), "all (bit masks)": build_bert(
        hidden, heads, layers, ALL, "bit")}
    times: dict[str, list[float]] = {k: [] for k in models}
    with memory.bool_mask_dropout():
        for m in models.values():
            train_step(m, ids)  # warm-up (builds the GELU tables)
        for _ in range(repeats):
            for name, m in models.items():
                t0 = time.perf_counter()
                train_step(m, ids)
                times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    return dict(hidden=hidden, seq=seq, batch=batch, layers=layers, median_s=med,
                ratio=med["all (bit masks)"] / med["baseline"])


def _mib(n: float) -> str:
    return f"{n / 2**20:.3f}"


def bytes_markdown(rows: list[dict[str, Any]]) -> str:
    out = ["| width | S | variant | measured MiB | closed form MiB | vs baseline | equal |",
           "|---|---|---|---|---|---|---|"]
    base: dict[tuple[str, int], float] = {}
    for r in rows:
        key = (r["width"], r["seq"])
        base.setdefault(key, r["measured"])
        change = r["measured"] / base[key] - 1.0
        out.append(
            f"| {r['width']} | {r['seq']} | {r['variant']} | {_mib(r['measured'])} | "
            f"{_mib(r['closed_form'])} | {change:+.1%} | {r['measured'] == r['closed_form']} |"
        )
    return "\n".join(out)


def batch_markdown(rows: list[dict[str, Any]]) -> str:
    out = ["| config | variant | max batch (cap) | peak RSS over base, MiB | step s (median) | "
           "step vs baseline |", "|---|---|---|---|---|---|"]
    base_step: dict[str, float] = {}
    for r in rows:
        cfg = f"H={r['hidden']} S={r['seq']} L={r['layers']} b={r['batch']}"
        if "error" in r:
            out.append(f"| {cfg} | {r['variant']} | error | | | |")
            continue
        base_step.setdefault(cfg, r["step_s_median"])
        out.append(
            f"| {cfg} | {r['variant']} | {r['max_batch']} ({r['cap_mib']:.0f} MiB) | "
            f"{r['peak_minus_base_mib']:.0f} | {r['step_s_median']:.3f} | "
            f"{r['step_s_median'] / base_step[cfg]:.2f}x |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--part", choices=["bytes", "batch", "overhead", "all"], default="all")
    ap.add_argument("--out", default="results/memsave")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.part in ("bytes", "all"):
        rows = bytes_table()
        with open(os.path.join(args.out, "bytes_per_layer.json"), "w") as f:
            json.dump(rows, f, indent=1)
        print(bytes_markdown(rows))
    if args.part in ("batch", "all"):
        configs = [
            dict(hidden=768, heads=12, layers=2, seq=128, batch=4, cap_mib=256, repeats=3),
            dict(hidden=1024, heads=16, layers=2, seq=512, batch=1, cap_mib=700, repeats=3),
        ]
        rows = batch_table(configs)
        with open(os.path.join(args.out, "max_batch.json"), "w") as f:
            json.dump(rows, f, indent=1)
        print(batch_markdown(rows))
    if args.part in ("overhead", "all"):
        for cfg in [dict(hidden=768, heads=12, seq=128, batch=4),
                    dict(hidden=1024, heads=16, seq=512, batch=1)]:
            print(json.dumps(step_overhead(**cfg)), flush=True)


if __name__ == "__main__":
    main()
