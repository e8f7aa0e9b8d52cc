"""E2's tile-size U-curve with its noise visible (BENCHMARKS.md §7.3): every U of one batch
is compiled in one process and their decodes are interleaved, round after round (the order
rotating each round), so a load spike hits every U alike and the spread of each point shows.

`python -m tempo.bench.u_curve [--t 1024] [--batches 1,16] [--us 16,...,1024] [--reps 3]`
runs Tempo's causal GPT-2 core (the E1 model) with one torch thread, prints ms/token per
decode, and writes results/gpt2/u_curve.md (min, median and every repeat per point, with
`uptime` before and after each batch) and results/gpt2/u_curve.png (min over repeats, the
repeats as dots). The `python -m tempo.bench e2` grid runs each point in its own process
(one decode pair per point, trimmed to T=256); this is the T=1024 curve the claim is about.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from tempo.bench.baselines.gpt2_core import Gpt2CoreConfig, init_weights
from tempo.bench.experiments.lm import MODEL
from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.results import results_path
from tempo.bench.systems.gpt2_tempo import TempoGpt2Decoder


def _uptime() -> str:
    return os.popen("uptime").read().strip()


def curve(batch: int, seq_len: int, us: list[int], reps: int,
          backend: str = "torch") -> dict[int, list[float]]:
    """ms/token of every repeat per U, all U of this batch interleaved."""
    cfg = dict(MODEL, seq_len=seq_len, attn="causal", window=128, batch=batch)
    c = Gpt2CoreConfig.from_dict(cfg)
    w = init_weights(c, "torch")
    x0 = np.random.default_rng(c.seed + 1).standard_normal((batch, c.d_model)).astype(
        np.float32)
    decs = {}
    for u in us:
        d = TempoGpt2Decoder(dict(cfg, block=u), DeviceMemoryAccountant(), weights=w, x0=x0,
                             backend=backend)
        d.compile()
        d.run()  # warm-up: regions' first calls
        decs[u] = d
        print(f"  B={batch} U={u}: compiled and warmed", flush=True)
    out: dict[int, list[float]] = {u: [] for u in us}
    for r in range(reps):
        order = us[r % len(us):] + us[: r % len(us)]
        for u in order:
            t = time.perf_counter()
            decs[u].run()
            out[u].append((time.perf_counter() - t) / seq_len * 1e3)
            print(f"  B={batch} round {r + 1}/{reps} U={u}: {out[u][-1]:.2f} ms/token",
                  flush=True)
    return out


def _plot(res: dict[int, dict[int, list[float]]], seq_len: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(res), figsize=(5 * len(res), 4), squeeze=False)
    for ax, (b, by_u) in zip(axes[0], res.items()):
        us = sorted(by_u)
        ax.plot(us, [min(by_u[u]) for u in us], marker="o", label="min over repeats")
        for u in us:
            ax.scatter([u] * len(by_u[u]), by_u[u], color="grey", s=8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("U (points per block)")
        ax.set_ylabel("ms/token")
        ax.set_title(f"Tempo causal, T={seq_len}, batch {b}")  # (backend: the file name)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t", type=int, default=1024, help="decode steps")
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--us", default="16,32,64,128,256,512,1024")
    ap.add_argument("--reps", type=int, default=3, help="interleaved rounds (>= 3)")
    ap.add_argument("--backend", default="torch", choices=("torch", "numpy"),
                    help="numpy keeps a dispatch per block; torch reads a causal history "
                         "as one view")
    ap.add_argument("--out", default=str(results_path("gpt2")))
    args = ap.parse_args()
    torch.set_num_threads(1)
    us = [int(u) for u in args.us.split(",")]
    res: dict[int, dict[int, list[float]]] = {}
    lines = [f"# E2 U-curve, Tempo {args.backend} causal GPT-2 core (4 layers, d 128), T={args.t}, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             f"`python -m tempo.bench.u_curve --t {args.t} --batches {args.batches} --us "
             f"{args.us} --reps {args.reps} --backend {args.backend}`: one torch thread, "
             "every U of a batch compiled in one process, decodes interleaved round by "
             "round (order rotating); ms/token.",
             ""]
    for b in (int(x) for x in args.batches.split(",")):
        before = _uptime()
        res[b] = curve(b, args.t, us, args.reps, args.backend)
        best = min(us, key=lambda u: min(res[b][u]))
        lo = min(res[b][best])
        lines += [f"## batch {b}", "", f"load before: `{before}`", f"load after: `{_uptime()}`",
                  "", "| U | min | median | / best min | repeats |", "|---|---|---|---|---|"]
        lines += [f"| {u} | {min(v):.2f} | {statistics.median(v):.2f} | {min(v) / lo:.2f} | "
                  + ", ".join(f"{x:.2f}" for x in v) + " |" for u, v in res[b].items()]
        lines += ["", f"Best U at batch {b}: {best} ({lo:.2f} ms/token).", ""]
        print("\n".join(lines[-len(us) - 4:]), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "u_curve" if args.backend == "torch" else f"u_curve_{args.backend}"
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    _plot(res, args.t, out / f"{stem}.png")
    print(f"wrote {out / stem}.md and {out / stem}.png", flush=True)


if __name__ == "__main__":
    main()
