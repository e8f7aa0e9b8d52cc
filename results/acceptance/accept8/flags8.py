"""One program under a few optional-primitive / pass flags: flags8.py prog.py backend.
Prints one line per setting: ok, WRONG (the disagreements) or EXC."""
import dataclasses, importlib.util, os, sys, tempfile, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness import _check  # noqa: E402  (../harness.py)
from tempo.core.configs import ExecutionConfig  # noqa: E402

SETTINGS = ["enable_index_ops=False", "enable_matmul_ops=False", "enable_fusion=False",
            "enable_vectorization=False", "enable_incrementalization=False",
            "enable_statifying_incrementalization=False", "enable_algebraic_optimizer=False",
            "enable_dataflow_grouping=False", "enable_gc=False", "enable_swap=True, swap_bytes_min=1",
            "inc_statify_block_size=2"]
spec = importlib.util.spec_from_file_location("p", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
for s in SETTINGS:
    kw = eval(f"dict({s})")
    cfg = dataclasses.replace(ExecutionConfig(dev="cpu", backend=sys.argv[2],
                                              path=tempfile.mkdtemp() + "/"), **kw)
    try:
        bad = _check(m.program(cfg))
        print(os.path.basename(sys.argv[1]), sys.argv[2], s, "ok" if not bad else f"WRONG {bad}", flush=True)
    except Exception as e:  # noqa: BLE001
        print(os.path.basename(sys.argv[1]), sys.argv[2], s, f"EXC {type(e).__name__}: {str(e)[:300]}", flush=True)
