"""E1's Tempo-vs-Torch-opt ratio measured in one process, runs interleaved (BENCHMARKS.md:
on a shared machine never trust one absolute time).

`python -m tempo.bench.tpt_pair [--t 256[,1024]] [--reps 12] [--attn causal,window] [--block U]`
compiles the Tempo GPT-2-core system (with the bench's 48 MiB device cap, so Tempo's
accountant is on as in E1; U points per K/V block, 256 as in E1's grid) and builds the
Torch-opt baseline on the same weights, then alternates their decodes with one torch thread
and prints min and median ms per token, their ratios (wall, and thread CPU time, which a
loaded machine's waits for a core do not inflate) and `uptime`.
The E1 grid runs each system in its own subprocess; this is the paired check of its ratio
claims. Lines are appended to results/tpt_pair.txt.

Why paired ratios (2026-11-23, e1tpt): at T=1024 one run takes ~1 s and the machine's speed
drifts by 2x over seconds (other processes share its caches and memory bandwidth: thread
CPU time drifts with wall time, and both decoders drift together; per-token times show no
step of ours that is slow run after run). Min over runs then compares whichever system
caught the quietest second. Each rep therefore runs the two back to back, alternating
which goes first (ABBA, so neither always follows a pause), and the ratio of each such
pair is reported too (its median and its spread): a drift slower than a pair cancels in it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch

from tempo.bench.baselines.gpt2_core import Gpt2CoreConfig, init_weights
from tempo.bench.baselines.gpt2_torch import TorchGpt2Decoder
from tempo.bench.clock import cpu_seconds
from tempo.bench.experiments.lm import MODEL
from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.results import append_lines
from tempo.bench.systems.gpt2_tempo import TempoGpt2Decoder

CAP = 48 << 20  # E1's device cap
AGREE = 6  # decode steps compared before timing


def pair(attn: str, seq_len: int, reps: int, block: int = 256) -> str:
    """One attention kind: both decoders, `reps` interleaved runs each; the result line.
    `block`: Tempo's U (E1's grid uses the default, 256)."""
    cfg = dict(MODEL, seq_len=seq_len, attn=attn, window=128, batch=4, block=block)
    c = Gpt2CoreConfig.from_dict(cfg)
    w = init_weights(c, "torch")
    x0 = np.random.default_rng(c.seed + 1).standard_normal((c.batch, c.d_model)).astype(
        np.float32)
    tempo = TempoGpt2Decoder(cfg, DeviceMemoryAccountant(CAP), weights=w, x0=x0)
    t0 = cpu_seconds()
    tempo.compile()
    compile_s = cpu_seconds() - t0
    base = TorchGpt2Decoder(cfg, DeviceMemoryAccountant(), weights=w, x0=x0)
    tempo.run()
    base.run()  # warm both
    # A ratio of different programs means nothing. The decode is chaotic (Q/K/V ~ randn:
    # both decoders leave a float64 decode by 1e-3 within ~8 steps, each other within ~30),
    # so only its first steps can be compared; a wrong program differs from step 1.
    if tempo.out is None or base.out is None or not torch.allclose(
            tempo.out[:, :AGREE], base.out[:, :AGREE], rtol=1e-3, atol=1e-3):
        raise AssertionError(f"{attn} T={seq_len}: Tempo's decode disagrees with torch-opt's")
    times: dict[str, list[float]] = {k: [] for k in ("ours", "theirs", "ours_cpu", "theirs_cpu")}
    for rep in range(reps):
        order = (("ours", tempo), ("theirs", base))
        for name, system in order if rep % 2 == 0 else order[::-1]:
            t0, c0 = time.perf_counter(), time.thread_time()
            system.run()
            times[name + "_cpu"].append((time.thread_time() - c0) / seq_len * 1e3)
            times[name].append((time.perf_counter() - t0) / seq_len * 1e3)
    ours, theirs = times["ours"], times["theirs"]
    mo, mt = statistics.median(ours), statistics.median(theirs)
    oc, tc = times["ours_cpu"], times["theirs_cpu"]
    lo, med, hi = paired(ours, theirs)
    u = "" if block == 256 else f" U={block}"
    return (f"{attn} T={seq_len}{u}: tempo min {min(ours):.3f} med {mo:.3f} ms/token | torch-opt "
            f"min {min(theirs):.3f} med {mt:.3f} | tempo/torch-opt min "
            f"{min(ours) / min(theirs):.2f} med {mo / mt:.2f} | paired med {med:.2f} "
            f"({lo:.2f}..{hi:.2f}) | thread CPU min {min(oc) / min(tc):.2f} med "
            f"{statistics.median(oc) / statistics.median(tc):.2f} paired med "
            f"{paired(oc, tc)[1]:.2f} | compile {compile_s:.1f} CPU-s")


def paired(ours: list[float], theirs: list[float]) -> tuple[float, float, float]:
    """(min, median, max) of the ratios ours[i] / theirs[i] of runs made back to back."""
    r = [a / b for a, b in zip(ours, theirs, strict=True)]
    return min(r), statistics.median(r), max(r)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t", default="256", help="decode steps (comma-separated: one pair each)")
    ap.add_argument("--reps", type=int, default=12, help="interleaved runs of each system")
    ap.add_argument("--attn", default="causal,window", help="causal and/or window")
    ap.add_argument("--block", type=int, default=256, help="Tempo's block size U")
    args = ap.parse_args()
    torch.set_num_threads(1)
    lines = [f"# {time.strftime('%Y-%m-%d %H:%M:%S')}  {os.popen('uptime').read().strip()}"]
    print(lines[0], flush=True)
    for t in (int(x) for x in args.t.split(",")):
        for attn in args.attn.split(","):
            lines.append(pair(attn, t, args.reps, args.block))
            print(lines[-1], flush=True)
    lines.append(f"# after: {os.popen('uptime').read().strip()}")
    print(lines[-1], flush=True)
    append_lines("tpt_pair.txt", lines)


if __name__ == "__main__":
    main()
