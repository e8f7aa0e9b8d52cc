"""accept8's configs for the shared harness (../harness.py). Also records the CPU seconds of
every `compile` a program makes (common8.compile_timed) in its JSON line."""
import os, sys, time, warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness import main as shared_main  # noqa: E402
import common8  # noqa: E402

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
            common8.COMPILES.append(time.process_time() - c0)
    timed._timed = True
    TempoContext.compile = timed


def main(path: str, configs: list[str], timeout: int = 300) -> None:
    _time_every_compile()
    shared_main(path, configs, timeout, before=common8.COMPILES.clear,
                extra=lambda: {"compile_cpu": [round(x, 2) for x in common8.COMPILES]})


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    cf = sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] else CONFIGS
    main(sys.argv[1], cf, int(sys.argv[3]) if len(sys.argv) > 3 else 300)
