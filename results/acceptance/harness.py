"""The acceptance sweeps' harness: run one program (a module with `program(cfg) ->
list[(name, got, want, tol)]`) under each config in one process, one JSON line per
(program, config). Each sweep (accept4/, accept5a/, accept5b/) names its own CONFIGS in
its harness.py and calls `main` here; `run.sh` beside this file runs a program of a sweep.
Config names are backend:variant, the variants below."""
from __future__ import annotations
import dataclasses, importlib.util, json, signal, sys, tempfile, time, warnings
import numpy as np


def make_cfg(name: str, tmp: str):
    from tempo.core.configs import ExecutionConfig
    be, var = name.split(":")
    cfg = ExecutionConfig(dev="cpu", backend=be, path=tmp + "/")
    variants = {
        "default": {},
        "vec_off": {"enable_vectorization": False},
        "group_off": {"enable_dataflow_grouping": False},
        "fuse_off": {"enable_fusion": False},
        "fus_off": {"enable_fusion": False},
        "both_off": {"enable_vectorization": False, "enable_fusion": False},
    }
    if var == "test_cfg":
        return dataclasses.replace(ExecutionConfig.test_cfg(), backend=be, dev="cpu",
                                   path=tmp + "/")
    return dataclasses.replace(cfg, **variants[var])


def to_np(x):
    if hasattr(x, "detach"):
        x = x.detach().cpu()
        if x.dtype.is_floating_point and x.dtype != __import__("torch").float64:
            x = x.float()
    return np.asarray(x)


class Alarm(Exception):
    pass


def _check(res) -> list[str]:
    bad = []
    for name, got, want, tol in res:
        g, w = to_np(got), to_np(want)
        if g.shape != w.shape:
            bad.append(f"{name}: shape {g.shape} vs {w.shape}")
            continue
        if g.dtype == bool or w.dtype == bool or not np.issubdtype(w.dtype, np.number):
            if not np.array_equal(g, w):
                bad.append(f"{name}: {g.ravel()[:6]} vs {w.ravel()[:6]}")
            continue
        err = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) if g.size else 0.0
        if not (err <= tol):
            bad.append(f"{name}: max err {err:.3g} (tol {tol})")
    return bad


def main(path: str, configs: list[str], timeout: int = 300, before=None, extra=None) -> None:
    """One JSON line per config the program allows; `before()` runs before each config and
    `extra()` adds fields to its line (a sweep's own records, e.g. accept7's compile CPU)."""
    spec = importlib.util.spec_from_file_location("prog", path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    allowed = getattr(mod, "CONFIGS", configs)
    def on_alarm(*_):
        raise Alarm()
    signal.signal(signal.SIGALRM, on_alarm)
    for c in [c for c in configs if c in allowed]:
        tmp = tempfile.mkdtemp(prefix="accept_")
        if before is not None:
            before()
        t0 = time.time(); c0 = time.process_time(); status = "ok"; detail = ""
        signal.alarm(timeout)
        try:
            bad = _check(mod.program(make_cfg(c, tmp)))
            if bad:
                status, detail = "WRONG", "; ".join(bad)
        except Alarm:
            status, detail = "HANG", f"> {timeout}s"
        except Exception as e:  # noqa: BLE001
            status, detail = "EXC", f"{type(e).__name__}: {str(e)[:600]}"
        finally:
            signal.alarm(0)
        print(json.dumps({"prog": path.split("/")[-1][:-3], "cfg": c, "status": status,
                          "detail": detail, "secs": round(time.time() - t0, 1),
                          "cpu": round(time.process_time() - c0, 1),
                          **(extra() if extra is not None else {})}), flush=True)


def cli(configs: list[str]) -> None:
    """`harness.py prog.py [cfg,cfg,...] [timeout]` with the sweep's default configs."""
    warnings.simplefilter("ignore")
    cf = sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] else configs
    main(sys.argv[1], cf, int(sys.argv[3]) if len(sys.argv) > 3 else 300)


def grid(results: str, configs: list[str]) -> None:
    """The programs x configs table of a sweep's results (JSON lines), then its failures."""
    import collections
    rows = {}
    for line in open(results):
        try:
            r = json.loads(line)
        except Exception:
            continue
        rows[(r["prog"], r["cfg"])] = r
    print("| program | " + " | ".join(configs) + " |")
    print("|---|" + "---|" * len(configs))
    tot: collections.Counter = collections.Counter(); bad = []
    for p in sorted({p for p, _ in rows}):
        cells = []
        for c in configs:
            r = rows.get((p, c))
            cells.append(r["status"] if r else "")
            if r:
                tot[r["status"]] += 1
                if r["status"] != "ok":
                    bad.append(f"- {p} {c}: {r['status']} {r['detail'][:300]}")
        print(f"| {p} | " + " | ".join(cells) + " |")
    print()
    print("totals: " + ", ".join(f"{k} {v}" for k, v in tot.items()))
    print()
    print("\n".join(bad))
