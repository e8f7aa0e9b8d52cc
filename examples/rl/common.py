"""What every RL example shares: the command line, a per-iteration log fed by a sink (with a
tqdm bar), and the CSV and PNG learning curve written under results/."""

from __future__ import annotations

import argparse
import csv
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from tempo.core.configs import ExecutionConfig


def base_parser(description: str, env: str, iterations: int, ep_len: int,
                num_envs: int) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--env", default=env, help="<env_set>.<env_name>, e.g. gym.CartPole-v1")
    p.add_argument("--iterations", type=int, default=iterations, help="training iterations I")
    p.add_argument("--ep-len", type=int, default=ep_len, help="steps per rollout T")
    p.add_argument("--num-envs", type=int, default=num_envs,
                   help="environments per iteration (a vector env, spatial batch)")
    p.add_argument("--symbolic-batch", action="store_true",
                   help="put the envs on a symbolic dim b instead (one env per point of b)")
    p.add_argument("--hidden", type=int, nargs="+", default=[64, 64])
    p.add_argument("--lr", type=float, default=5e-3)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--backend", default="torch", choices=["torch", "jax", "numpy"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="results/rl", help="directory for the CSV and PNG")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def exec_config(backend: str, seed: int) -> ExecutionConfig:
    return ExecutionConfig(dev="cpu", backend=backend, path="", seed=seed, deterministic=True)


@dataclass
class TrainLog:
    """Per-iteration metrics, filled by a sink during `execute()`; drives a tqdm bar."""

    name: str
    iterations: int
    quiet: bool = False
    rows: list[dict[str, float]] = field(default_factory=list)
    _bar: Any = None
    _t_last: float = 0.0

    def start(self) -> None:
        self._t_last = time.perf_counter()
        if not self.quiet:
            self._bar = tqdm(total=self.iterations, desc=self.name, unit="it")

    def log(self, iteration: int, **metrics: Any) -> None:
        now = time.perf_counter()
        row = {"iteration": float(iteration), "iter_time_s": now - self._t_last}
        row.update({k: float(np.asarray(v)) for k, v in metrics.items()})
        self._t_last = now
        self.rows.append(row)
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix({k: f"{v:.3g}" for k, v in row.items()
                                   if k not in ("iteration", "iter_time_s")})

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def column(self, key: str) -> np.ndarray:
        return np.array([r[key] for r in self.rows])

    def write(self, out_dir: str, stem: str, curve: str = "mean_return") -> tuple[str, str]:
        """`<stem>.csv` (one row per iteration) and `<stem>.png` (the learning curve)."""
        os.makedirs(out_dir, exist_ok=True)
        csv_path, png_path = os.path.join(out_dir, stem + ".csv"), os.path.join(out_dir,
                                                                                stem + ".png")
        if self.rows:
            with open(csv_path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(self.rows[0]))
                w.writeheader()
                w.writerows(self.rows)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        if self.rows:
            ax.plot(self.column("iteration"), self.column(curve), label=curve)
        ax.set_xlabel("iteration")
        ax.set_ylabel(curve.replace("_", " "))
        ax.set_title(self.name)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(png_path, dpi=100)
        plt.close(fig)
        return csv_path, png_path


@dataclass
class Program:
    """A recorded example: its context, compile bounds and the log its sinks fill."""

    ctx: Any
    bounds: dict[Any, int]
    log: TrainLog


def run(prog: Program) -> TrainLog:
    """Compile and execute, with the progress bar open during execution."""
    exe = prog.ctx.compile(prog.bounds)
    prog.log.start()
    try:
        exe.execute()
    finally:
        prog.log.close()
    return prog.log


def summary(log: TrainLog, key: str = "mean_return", window: int = 10) -> str:
    v = log.column(key)
    if not len(v):
        return "no iterations ran"
    first, last = v[: min(window, len(v))].mean(), v[-min(window, len(v)):].mean()
    return (f"{key}: first {min(window, len(v))} iterations {first:.1f} -> last "
            f"{min(window, len(v))} {last:.1f} (best {v.max():.1f})")


def env_slug(name: str) -> str:
    return name.replace(".", "_").replace("/", "_")


def seq(x: Sequence[int]) -> str:
    return "x".join(str(v) for v in x)
