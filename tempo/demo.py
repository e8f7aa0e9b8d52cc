"""`make demo`: PPO learns CartPole as one compiled Tempo program (about a minute on 2 cores).

The whole training loop — rollouts of 16 gymnasium CartPole envs over t, advantages by GAE
computed backwards in time, the clipped PPO loss, backward() and Adam over iterations i —
is recorded once (examples/rl/ppo.py), compiled, and executed. A progress bar shows the
mean episode return rising; the per-iteration CSV, the learning curve (PNG) and a summary
(JSON) go to results/demo/."""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from tempo.bench.clock import cpu_seconds

ITERATIONS, EP_LEN, NUM_ENVS, LR, SEED = 25, 200, 16, 5e-3, 0
OUT = "results/demo"


def main() -> None:
    sys.path.insert(0, os.getcwd())  # examples/ lives beside tempo/ in the repository
    import torch

    from examples.rl import ppo
    from examples.rl.common import summary

    torch.set_num_threads(1)
    args = ppo.parser().parse_args([
        "--env", "gym.CartPole-v1", "--iterations", str(ITERATIONS), "--ep-len", str(EP_LEN),
        "--num-envs", str(NUM_ENVS), "--lr", str(LR), "--seed", str(SEED), "--out", OUT])
    print(f"[demo] PPO on gym.CartPole-v1: {NUM_ENVS} envs x {EP_LEN} steps per iteration, "
          f"{ITERATIONS} iterations, one Tempo program")
    prog = ppo.build(args)
    t0, c0 = time.perf_counter(), cpu_seconds()
    exe = prog.ctx.compile(prog.bounds)
    compile_s, compile_cpu = time.perf_counter() - t0, cpu_seconds() - c0
    print(f"[demo] recorded {len(prog.ctx.sdg.ops)} ops, compiled in {compile_s:.1f} s "
          f"({compile_cpu:.1f} CPU s); training:")
    prog.log.start()
    t0 = time.perf_counter()
    try:
        exe.execute()
    finally:
        prog.log.close()
    train_s = time.perf_counter() - t0
    log = prog.log
    csv_path, png_path = log.write(OUT, "ppo_cartpole")
    ret = log.column("mean_return")
    learned = bool(ret[-5:].mean() > 2.0 * ret[:5].mean())
    res = {"iterations": ITERATIONS, "ep_len": EP_LEN, "num_envs": NUM_ENVS,
           "compile_s": compile_s, "compile_cpu_s": compile_cpu, "train_s": train_s,
           "mean_return_first5": float(ret[:5].mean()), "mean_return_last5":
           float(ret[-5:].mean()), "best_mean_return": float(np.max(ret)), "learned": learned}
    with open(os.path.join(OUT, "demo.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"[demo] {summary(log, window=5)}")
    print(f"[demo] trained in {train_s:.0f} s; wrote {csv_path}, {png_path} and "
          f"{os.path.join(OUT, 'demo.json')}")
    print(f"[demo] {'OK: the policy learned' if learned else 'NO LEARNING'} "
          "(CartPole's maximum here is 200 per episode)")
    if not learned:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
