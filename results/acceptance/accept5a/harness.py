"""accept5a harness (from accept4's): run each program (module with `program(cfg) -> list[(name, got, want, tol)]`)
under each config in one process per program; prints one JSON line per (program, config)."""
from __future__ import annotations
import dataclasses, importlib.util, json, signal, sys, time, traceback, warnings
import numpy as np

CONFIGS = ["torch:default", "torch:vec_off", "torch:fus_off", "torch:both_off", "jax:default", "jax:both_off", "numpy:default", "numpy:both_off"]

def make_cfg(name: str, tmp: str):
    from tempo.core.configs import ExecutionConfig
    be, var = name.split(":")
    cfg = ExecutionConfig(dev="cpu", backend=be, path=tmp + "/")
    if var == "vec_off":
        cfg = dataclasses.replace(cfg, enable_vectorization=False)
    elif var == "fus_off":
        cfg = dataclasses.replace(cfg, enable_fusion=False)
    elif var == "both_off":
        cfg = dataclasses.replace(cfg, enable_vectorization=False, enable_fusion=False)
    elif var == "test_cfg":
        cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=be, path=tmp + "/")
    return cfg

def to_np(x):
    if hasattr(x, "detach"):
        x = x.detach().cpu()
        if x.dtype.is_floating_point and x.dtype != __import__("torch").float64:
            x = x.float()
    return np.asarray(x)

class Alarm(Exception):
    pass

def main(path: str, configs: list[str], timeout: int) -> None:
    spec = importlib.util.spec_from_file_location("prog", path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    cfgs = getattr(mod, "CONFIGS", configs)
    cfgs = [c for c in configs if c in cfgs]
    def on_alarm(*_):
        raise Alarm()
    signal.signal(signal.SIGALRM, on_alarm)
    for c in cfgs:
        import tempfile
        tmp = tempfile.mkdtemp(prefix="a5_")
        t0 = time.time(); status = "ok"; detail = ""
        signal.alarm(timeout)
        try:
            res = mod.program(make_cfg(c, tmp))
            bad = []
            for name, got, want, tol in res:
                g, w = to_np(got), to_np(want)
                if g.shape != w.shape:
                    bad.append(f"{name}: shape {g.shape} vs {w.shape}"); continue
                if g.dtype == bool or w.dtype == bool or not np.issubdtype(w.dtype, np.number):
                    if not np.array_equal(g, w):
                        bad.append(f"{name}: {g.ravel()[:6]} vs {w.ravel()[:6]}")
                    continue
                err = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) if g.size else 0.0
                if not (err <= tol) :
                    bad.append(f"{name}: max err {err:.3g} (tol {tol})")
            if bad:
                status, detail = "WRONG", "; ".join(bad)
        except Alarm:
            status, detail = "HANG", f"> {timeout}s"
        except Exception as e:  # noqa: BLE001
            status = "EXC"
            tb = traceback.extract_tb(e.__traceback__)
            detail = f"{type(e).__name__}: {str(e)[:600]}"
        finally:
            signal.alarm(0)
        print(json.dumps({"prog": path.split("/")[-1][:-3], "cfg": c, "status": status,
                          "detail": detail, "secs": round(time.time() - t0, 1)}), flush=True)

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    cf = sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] else CONFIGS
    main(sys.argv[1], cf, int(sys.argv[3]) if len(sys.argv) > 3 else 300)
