"""E1 causal decode, Tempo with separate K/V blocks (the store choice before joined block
stores, patched back in) vs Tempo with joined blocks / whole ring runs vs torch-opt, in one
process, interleaved (rotating the order each rep), one torch thread: min, median and
paired median per-token ratios, wall and thread CPU, with `uptime`.

`python scripts/e1_stores_ab.py [--t 1024] [--reps 10]` (from the repository root, with
PYTHONPATH=. so this tree's tempo/ is used).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np
import torch

from tempo.bench.baselines.gpt2_core import Gpt2CoreConfig, init_weights
from tempo.bench.baselines.gpt2_torch import TorchGpt2Decoder
from tempo.bench.experiments.lm import MODEL
from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.systems.gpt2_tempo import TempoGpt2Decoder
from tempo.runtime.executor import executor as ex
from tempo.runtime.stores import BlockStore
from tempo.runtime.stores_deferred import DeferredBlockStore
from tempo.runtime.stores_ring import RingStore


def tempo(cfg: dict[str, Any], w: Any, x0: Any, separate: bool) -> TempoGpt2Decoder:
    names = ("JoinedBlockStore", "JoinedDeferredBlockStore", "RingStore")
    saved = {n: getattr(ex, n) for n in names}
    if separate:  # the stores as chosen before: blocks apart, rings cut into blocks of U
        patch = (lambda lay, u, extent: BlockStore(lay, u),
                 lambda lay, u, st, extent: DeferredBlockStore(lay, u, st),
                 lambda *a, whole=False: RingStore(*a))
        for n, f in zip(names, patch, strict=True):
            setattr(ex, n, f)
    try:
        d = TempoGpt2Decoder(cfg, DeviceMemoryAccountant(48 << 20), weights=w, x0=x0)
        d.compile()
    finally:
        for n, f in saved.items():
            setattr(ex, n, f)
    return d


def ratio(a: list[float], b: list[float]) -> str:
    r = [x / y for x, y in zip(a, b, strict=True)]
    return (f"min {min(a) / min(b):.2f} med {statistics.median(a) / statistics.median(b):.2f}"
            f" paired med {statistics.median(r):.2f} ({min(r):.2f}..{max(r):.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--attn", default="causal")
    args = ap.parse_args()
    torch.set_num_threads(1)
    T = args.t
    cfg = dict(MODEL, seq_len=T, attn=args.attn, window=128, batch=4, block=256)
    c = Gpt2CoreConfig.from_dict(cfg)
    w = init_weights(c, "torch")
    x0 = np.random.default_rng(c.seed + 1).standard_normal((c.batch, c.d_model)).astype(
        np.float32)
    ours = {"separate": tempo(cfg, w, x0, True), "joined": tempo(cfg, w, x0, False)}
    base = TorchGpt2Decoder(cfg, DeviceMemoryAccountant(), weights=w, x0=x0)
    systems: dict[str, Any] = {**ours, "torch": base}
    for s in systems.values():
        s.run()
    for k, d in ours.items():  # the same program: the first steps agree
        print(k, sorted({type(x).__name__ for x in d.exe.stores.values()}))
        assert d.out is not None and base.out is not None and torch.allclose(
            d.out[:, :6], base.out[:, :6], rtol=1e-3, atol=1e-3), k
    wall: dict[str, list[float]] = {k: [] for k in systems}
    cpu: dict[str, list[float]] = {k: [] for k in systems}
    names = list(systems)
    print(f"{args.attn} T={T} reps={args.reps} | {os.popen('uptime').read().strip()}")
    for r in range(args.reps):
        for k in names[r % 3:] + names[:r % 3]:
            t0, c0 = time.perf_counter(), time.thread_time()
            systems[k].run()
            cpu[k].append((time.thread_time() - c0) / T * 1e3)
            wall[k].append((time.perf_counter() - t0) / T * 1e3)
    for k in names:
        print(f"  {k}: wall min {min(wall[k]):.3f} med {statistics.median(wall[k]):.3f} | "
              f"thread CPU min {min(cpu[k]):.3f} med {statistics.median(cpu[k]):.3f} ms/token")
    for a, b in (("separate", "torch"), ("joined", "torch"), ("joined", "separate")):
        print(f"  {a}/{b}: wall {ratio(wall[a], wall[b])} | CPU {ratio(cpu[a], cpu[b])}")
    print(f"  after: {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
