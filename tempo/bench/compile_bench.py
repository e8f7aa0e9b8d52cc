"""`python -m tempo.bench compile`: compile time (CPU seconds of `ctx.compile`) and iteration
time of the issue-9 programs — MLP+Adam by depth, GRU/LSTM BPTT, the PPO-shaped learner with
the batch as a spatial or a symbolic dim — under the structural scheduler, and with
`--before` under isl's own scheduler (the previous path) in the same process, executions
interleaved. The recurrent programs are also timed against their eager PyTorch twins
(compile_eager.py) in the same process: the previous path never compiles GRU/LSTM BPTT.
Each program runs in its own forked process; results go to
`<results>/compile/compile.json`, the plot to `<results>/plots/compile_time.png`."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tempo.bench.clock import cpu_seconds
from tempo.bench.compile_programs import Program, mlp_adam, ppo_shaped, rnn_bptt
from tempo.core.configs import tuned

Spec = tuple[str, str, dict[str, Any]]  # (name, builder, kwargs)


def specs(quick: bool) -> list[Spec]:
    depths = (2, 4, 8) if quick else (2, 4, 8, 16, 32)
    steps, envs = (16, 16) if quick else (64, 64)
    out: list[Spec] = [(f"mlp_adam_d{d}", "mlp", {"depth": d}) for d in depths]
    out += [(f"{c}_bptt_T{steps}", "rnn", {"cell_kind": c, "steps": steps})
            for c in ("gru", "lstm")]
    out += [(f"ppo_spatial_b_{envs}x{steps}", "ppo",
             {"symbolic_batch": False, "envs": envs, "steps": steps}),
            (f"ppo_symbolic_b_{envs}x{steps}", "ppo",
             {"symbolic_batch": True, "envs": envs, "steps": steps, "iters": 1})]
    tokens = 32 if quick else 256
    out.append((f"gpt2_decode_causal_T{tokens}", "gpt2", {"seq_len": tokens}))
    return out


class _Gpt2:
    """The E1 GPT-2-core Tempo decoder as a benchmark program (one iteration = one token)."""

    def __init__(self, seq_len: int) -> None:
        from tempo.bench.memory import DeviceMemoryAccountant
        from tempo.bench.systems.gpt2_tempo import TempoGpt2Decoder

        self.dec = TempoGpt2Decoder({"seq_len": seq_len, "attn": "causal"},
                                    DeviceMemoryAccountant())
        self.iterations = seq_len
        self.losses: list[float] = []

    def compile(self) -> Any:
        self.dec.compile()
        self.ops = len(self.dec.exe.sdg.ops) if hasattr(self.dec.exe, "sdg") else None
        return self.dec.exe

    def run(self) -> None:
        self.dec.run()
        if self.dec.out is not None and not self.losses:
            self.losses = [float(self.dec.out.float().abs().mean())]


class _Prog:
    def __init__(self, p: Program) -> None:
        self.p, self.iterations, self.losses = p, p.iterations, p.losses
        self.ops = len(p.ctx.sdg.ops)

    def compile(self) -> Any:
        self.exe = self.p.ctx.compile(self.p.bounds)
        return self.exe

    def run(self) -> None:
        self.exe.execute()


class _Eager:
    """The eager PyTorch twin of a program (tempo/bench/compile_eager.py), timed beside it."""

    def __init__(self, fn: Callable[[], list[float]], iterations: int) -> None:
        self.fn, self.iterations = fn, iterations
        self.losses: list[float] = []

    def run(self) -> None:
        self.losses = self.fn()


def _eager(kind: str, kw: dict[str, Any]) -> _Eager | None:
    """The eager twin of a recurrent program, None for the others (MLP, GPT-2 have their
    own baselines: the previous schedule, and E1's)."""
    from tempo.bench import compile_eager

    shape = {k: v for k, v in kw.items() if k not in ("symbolic_batch",)}
    if kind == "rnn":
        return _Eager(compile_eager.rnn_bptt(**shape), shape.get("iters", 5))
    if kind == "ppo":
        return _Eager(compile_eager.ppo_shaped(**shape), shape.get("iters", 5))
    return None


def _build(kind: str, kw: dict[str, Any]) -> _Prog | _Gpt2:
    if kind == "gpt2":
        return _Gpt2(**kw)
    builders: dict[str, Callable[..., Program]] = {"mlp": mlp_adam, "rnn": rnn_bptt,
                                                     "ppo": ppo_shaped}
    return _Prog(builders[kind](**kw))


def _compile(p: _Prog | _Gpt2) -> dict[str, Any]:
    c0, w0 = cpu_seconds(), time.perf_counter()
    exe = p.compile()
    return {"compile_cpu_s": cpu_seconds() - c0,
            "compile_wall_s": time.perf_counter() - w0, "ops_recorded": p.ops,
            "profile_ms": {k: round(v, 1) for k, v in exe.compile_profile().items()}}


def _time_runs(runs: dict[str, Any], repeats: int) -> dict[str, dict[str, float]]:
    """ms per iteration of each program, executions interleaved so load hits all alike."""
    ts: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(repeats):
        for k, p in runs.items():
            t0 = time.perf_counter()
            p.run()
            ts[k].append((time.perf_counter() - t0) / p.iterations * 1e3)
    return {k: {"ms_per_iter_min": min(v), "ms_per_iter_median": statistics.median(v)}
            for k, v in ts.items()}


def _warm_up() -> None:
    """One tiny compile first, so one-time costs (imports, isl and kernel set-up) are not
    charged to the first program measured."""
    p = mlp_adam(1, iters=2)
    p.ctx.compile(p.bounds).execute()


def _child(kind: str, kw: dict[str, Any], before: bool, isl_cpu_s: float, repeats: int,
           q: Any) -> None:
    import torch

    import tempo.schedule.scheduler as sched

    torch.set_num_threads(1)
    _warm_up()
    out: dict[str, Any] = {}
    p = _build(kind, kw)
    out["structured"] = _compile(p)
    runs: dict[str, _Prog | _Gpt2 | _Eager] = {"structured": p}
    eager = _eager(kind, kw)
    if eager is not None:
        runs["eager_torch"] = eager
        out["eager_torch"] = {}
    for k, v in _time_runs(runs, repeats).items():  # interleaved with the eager twin
        out[k].update(v)
    out["structured"]["first_losses"] = p.losses[:3]
    if before:
        q.put(dict(out))  # what we have if isl runs out of CPU time
        used = resource.getrusage(resource.RUSAGE_SELF).ru_utime
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        resource.setrlimit(resource.RLIMIT_CPU, (int(used + isl_cpu_s) + 1, hard))
        sched.FORCE_ISL = True
        p2 = _build(kind, kw)
        with tuned(isl_schedule_cpu_s=isl_cpu_s):  # this bench's limit, not the default
            out["isl"] = _compile(p2)
        sched.FORCE_ISL = False
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        runs["isl"] = p2
        p.losses.clear()
        for k, v in _time_runs(runs, repeats).items():  # interleaved, both schedules
            out[k].update(v)
        for k, prog in runs.items():
            out[k]["first_losses"] = prog.losses[:3]
    q.put(out)


def measure(spec: Spec, before: bool, isl_cpu_s: float, repeats: int) -> dict[str, Any]:
    name, kind, kw = spec
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    proc = ctx.Process(target=_child, args=(kind, kw, before, isl_cpu_s, repeats, q))
    proc.start()
    got: dict[str, Any] = {}
    while proc.is_alive() or not q.empty():
        try:
            got = q.get(timeout=1.0)
        except Exception:  # noqa: BLE001 - queue.Empty: keep waiting for the child
            continue
    proc.join()
    if before and "isl" not in got:
        got["isl"] = {"status": f"did not finish within {isl_cpu_s:.0f} CPU-s"}
    if "structured" not in got:
        got["structured"] = {"status": f"failed (exit code {proc.exitcode})"}
    got["load_avg"] = list(os.getloadavg())
    return got


def run(root: Path, quick: bool, before: bool, isl_cpu_s: float,
        only: set[str] | None = None) -> Path:
    """Measure every program (or those whose name starts with one of `only`), merging into
    an existing compile.json so runs of subsets accumulate."""
    out_dir = root / "compile"
    out_dir.mkdir(parents=True, exist_ok=True)
    f = out_dir / "compile.json"
    results: dict[str, Any] = json.loads(f.read_text()) if f.exists() else {}
    results.update({"quick": quick, "isl_cpu_limit_s": isl_cpu_s})
    for spec in specs(quick):
        if only and not any(spec[0].startswith(o) for o in only):
            continue
        t0 = time.perf_counter()
        old = results.get(spec[0], {})
        results[spec[0]] = r = measure(spec, before, isl_cpu_s, repeats=3)
        if not before and "isl" in old:
            r["isl"] = old["isl"]  # keep a --before measurement of the previous path
        s = r["structured"]
        line = (f"{spec[0]:28s} compile {s.get('compile_cpu_s', float('nan')):6.2f} CPU-s, "
                f"{s.get('ms_per_iter_median', float('nan')):8.1f} ms/iter")
        if "eager_torch" in r:
            e = r["eager_torch"]
            line += (f" | eager torch {e['ms_per_iter_median']:.1f} ms/iter "
                     f"(x{s['ms_per_iter_median'] / e['ms_per_iter_median']:.2f})")
        if before:
            i = r["isl"]
            line += (f" | isl: {i['compile_cpu_s']:.2f} CPU-s, {i['ms_per_iter_median']:.1f} "
                     "ms/iter" if "compile_cpu_s" in i else f" | isl: {i['status']}")
        print(f"{line}  ({time.perf_counter() - t0:.0f} s, load {r['load_avg'][0]:.1f})",
              flush=True)
        f.write_text(json.dumps(results, indent=1))
    plot(results, root / "plots" / "compile_time.png")
    return f


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    rows = {k: v for k, v in results.items() if isinstance(v, dict) and "structured" in v}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for label, key in (("structured", "structured"), ("isl scheduler (before)", "isl")):
        pts = [(int(k.split("_d")[1]), v[key]["compile_cpu_s"]) for k, v in rows.items()
               if k.startswith("mlp_adam_d") and "compile_cpu_s" in v.get(key, {})]
        if pts:
            ax1.plot(*zip(*sorted(pts)), marker="o", label=label)
    ax1.set_xlabel("MLP depth (layers)")
    ax1.set_ylabel("compile time (CPU s)")
    ax1.set_ylim(bottom=0)
    ax1.set_title("MLP + Adam: compile time vs depth")
    if ax1.get_legend_handles_labels()[0]:  # a run of a subset may have no MLP points
        ax1.legend()
    names = [k for k in rows if not k.startswith("mlp_adam_d")]
    vals = [rows[k]["structured"].get("compile_cpu_s", 0.0) for k in names]
    ax2.bar(range(len(names)), vals)
    ax2.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=8)
    ax2.set_ylabel("compile time (CPU s)")
    ax2.set_ylim(bottom=0)
    ax2.axhline(5.0, color="grey", linestyle="--", linewidth=1)
    ax2.set_title("RNN BPTT and PPO-shaped programs (goal: 5 s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def section(root: Path) -> str:
    """REPORT.md section: the compile table, or one line saying how to produce it."""
    f = root / "compile" / "compile.json"
    head = ("## Compile time (issue 9)\n\nClaim: real programs compile in seconds, growing at "
            "most linearly with size.\n")
    if not f.exists():
        return head + "\nNo data: run `python -m tempo.bench compile [--before]`.\n"
    res = json.loads(f.read_text())
    lines = [head, "| program | ops | compile CPU s | compile wall s | ms/iter (min / median) |"
             " isl: compile CPU s | isl: ms/iter (min / median) |"
             " eager torch: ms/iter (min / median) | load |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in res.items():
        if not isinstance(r, dict) or "structured" not in r:
            continue
        s, i = r["structured"], r.get("isl", {})
        ours = (f"{s['compile_cpu_s']:.2f} | {s['compile_wall_s']:.2f} | "
                f"{s['ms_per_iter_min']:.1f} / {s['ms_per_iter_median']:.1f}"
                if "compile_cpu_s" in s else f"{s.get('status')} | | ")
        if "compile_cpu_s" in i:
            theirs = (f"{i['compile_cpu_s']:.2f} | {i['ms_per_iter_min']:.1f} / "
                      f"{i['ms_per_iter_median']:.1f}")
        else:
            theirs = f"{i.get('status', 'not measured (run with --before)')} | –"
        e = r.get("eager_torch", {})
        eager = (f"{e['ms_per_iter_min']:.1f} / {e['ms_per_iter_median']:.1f}"
                 if "ms_per_iter_min" in e else "–")
        lines.append(f"| {name} | {s.get('ops_recorded', '–')} | {ours} | {theirs} | {eager} | "
                     f"{r['load_avg'][0]:.1f} |")
    lines += ["", "![compile time](plots/compile_time.png)", ""]
    return "\n".join(lines)
