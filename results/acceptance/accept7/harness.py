"""accept7's configs for the shared harness (../harness.py). Also records the CPU seconds of
every `compile` a program makes (common7.compile_timed) in its JSON line."""
import json, os, signal, sys, tempfile, time, warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness import Alarm, _check, make_cfg  # noqa: E402
import common7  # noqa: E402

CONFIGS = ["torch:default", "torch:both_off", "jax:default", "numpy:default", "torch:test_cfg",
           "jax:test_cfg", "numpy:test_cfg"]


def _time_every_compile() -> None:
    """Record the CPU seconds of every TempoContext.compile (also other sweeps' programs)."""
    from tempo.api.tempo_context_manager import TempoContext
    if getattr(TempoContext.compile, "_timed", False):
        return
    orig = TempoContext.compile

    def timed(self, *a, **k):
        c0 = time.process_time()
        try:
            return orig(self, *a, **k)
        finally:
            common7.COMPILES.append(time.process_time() - c0)
    timed._timed = True
    TempoContext.compile = timed


def main(path: str, configs: list[str], timeout: int = 300) -> None:
    import importlib.util
    _time_every_compile()
    spec = importlib.util.spec_from_file_location("prog", path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    allowed = getattr(mod, "CONFIGS", configs)
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(Alarm()))
    for c in [c for c in configs if c in allowed]:
        tmp = tempfile.mkdtemp(prefix="accept7_")
        common7.COMPILES.clear()
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
                          "compile_cpu": [round(x, 2) for x in common7.COMPILES]}), flush=True)


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    cf = sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] else CONFIGS
    main(sys.argv[1], cf, int(sys.argv[3]) if len(sys.argv) > 3 else 300)
