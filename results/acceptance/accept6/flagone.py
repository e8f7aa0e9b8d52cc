import sys, dataclasses, tempfile, importlib.util
sys.path.insert(0, "/work/wt/accept6/results/acceptance")
from harness import _check
from tempo.core.configs import ExecutionConfig
spec = importlib.util.spec_from_file_location("p", sys.argv[1]); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
kw = eval(f"dict({sys.argv[3]})")
cfg = dataclasses.replace(ExecutionConfig(dev="cpu", backend=sys.argv[2], path=tempfile.mkdtemp() + "/"), **kw)
print(_check(m.program(cfg)))
