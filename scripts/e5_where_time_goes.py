"""Where one E5 iteration's thread CPU goes on Tempo torch (base point B=64, T=64, one
torch thread): per generated kernel (calls per iteration, ms per iteration), the block
stores' settles (the stacks that hand the rollout to the learner), and the rest (the
generated loop's own Python and store reads/writes). Medians over runs of 4 iterations;
thread CPU, which a loaded machine inflates less than wall time.

`python scripts/e5_where_time_goes.py [--runs 7] [--members REGION_OP_ID]` (run from the
repository root); `--members` also prints each member of one region with its fold, its
min/median thread CPU per call and its inputs' shapes.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from tempo.bench import e5_pair
from tempo.runtime import regions, stores_deferred
from tempo.runtime.region_folds import fold_kernel, torch_folds

Fn = Callable[..., Any]


def _compiled() -> Any:
    exe, _ = e5_pair.compile_tempo(e5_pair._config(64, 64, 4), "torch")
    exe.execute()  # warm-up
    return exe


def kernels_table(exe: Any, runs: int) -> list[str]:
    """Markdown rows: total, kernels, settles, rest; then one row per kernel >= 0.05 ms."""
    ns = exe.generated.namespace
    keys = [k for k in ns if k.startswith("k") and k[1:].isdigit()]
    orig = {k: ns[k] for k in keys}
    clock = time.thread_time
    cur: collections.defaultdict[str, float] = collections.defaultdict(float)
    calls: collections.Counter[str] = collections.Counter()

    def wrap(k: str, f: Fn) -> Fn:
        def timed(*a: Any) -> Any:
            t = clock()
            r = f(*a)
            cur[k] += clock() - t
            calls[k] += 1
            return r
        return timed

    settle_block = stores_deferred.DeferredBlockStore._settle_block

    def settle(self: Any, *a: Any) -> None:
        t = clock()
        settle_block(self, *a)
        cur["settle"] += clock() - t

    per_run: list[dict[str, float]] = []
    setattr(stores_deferred.DeferredBlockStore, "_settle_block", settle)  # noqa: B010
    for k in keys:
        ns[k] = wrap(k, orig[k])
    try:
        for _ in range(runs):
            cur.clear()
            calls.clear()
            exe.reset()
            t = clock()
            exe.execute()
            cur["total"] = clock() - t
            per_run.append(dict(cur))
    finally:
        setattr(stores_deferred.DeferredBlockStore, "_settle_block", settle_block)  # noqa: B010
        for k in keys:
            ns[k] = orig[k]
    names: set[str] = set().union(*per_run)
    med = {k: statistics.median(r.get(k, 0.0) for r in per_run) / 4 * 1e3 for k in names}
    kern = sum(v for k, v in med.items() if k.startswith("k"))
    rest = med["total"] - kern - med.get("settle", 0.0)
    lines = [f"total {med['total']:.2f} ms/iter thread CPU (median of {runs} runs x 4 "
             f"iterations): kernels {kern:.2f}, store settles (stacks) "
             f"{med.get('settle', 0.0):.2f}, rest (loop Python, store ops) {rest:.2f}",
             "| kernel | op | calls/iter | ms/iter |", "|---|---|---:|---:|"]
    small = 0.0
    for v, k in sorted(((v, k) for k, v in med.items() if k.startswith("k")), reverse=True):
        if v < 0.05:
            small += v
            continue
        lines.append(f"| {k} | {str(exe.sdg.ops[int(k[1:])])[:60]} | {calls[k] / 4:.0f} | "
                     f"{v:.2f} |")
    lines.append(f"| (other kernels) | | | {small:.2f} |")
    return lines


def members_table(exe: Any, rid: int, runs: int) -> list[str]:
    """One row per member call site of region `rid`: fold, min/median us per call, shapes."""
    op = exe.sdg.ops[rid]
    folds = torch_folds(op, True)
    kernels = [fold_kernel(folds[k].kind, False) if k in folds else exe.backend.kernel(m)
               for k, m in enumerate(op.body)]
    times: dict[int, list[float]] = collections.defaultdict(list)
    shapes: dict[int, list[Any]] = {}
    clock = time.thread_time

    def wrap(k: int, f: Fn) -> Fn:
        def timed(*a: Any) -> Any:
            t = clock()
            r = f(*a)
            times[k].append(clock() - t)
            shapes.setdefault(k, [tuple(x.shape) if isinstance(x, torch.Tensor) else x
                                  for x in a])
            return r
        return timed

    ns = exe.generated.namespace
    orig = ns[f"k{rid}"]
    ns[f"k{rid}"] = regions.body_function(op, [wrap(k, f) for k, f in enumerate(kernels)],
                                          "<members>", folds)
    try:
        for _ in range(runs):
            exe.reset()
            exe.execute()
    finally:
        ns[f"k{rid}"] = orig
    lines = ["| member | op | fold | min us | median us | input shapes |",
             "|---:|---|---|---:|---:|---|"]
    for k in sorted(times):
        kind = folds[k].kind if k in folds else ""
        lines.append(f"| {k} | {op.body[k]} | {kind} | {min(times[k]) * 1e6:.1f} | "
                     f"{statistics.median(times[k]) * 1e6:.1f} | {shapes[k]} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--members", type=int, default=None, help="a region's op id")
    args = ap.parse_args()
    torch.set_num_threads(1)
    exe = _compiled()
    print("\n".join(kernels_table(exe, args.runs)))
    if args.members is not None:
        print("\n".join(members_table(exe, args.members, args.runs)))


if __name__ == "__main__":
    main()
