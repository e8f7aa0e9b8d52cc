"""usage: python results/acceptance/accept6/flagone.py PROG.py BACKEND "flag=value, ..." (one
program, one backend, ExecutionConfig fields set as given; prints the failed checks)."""
import os, sys, dataclasses, tempfile, importlib.util
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the shared harness
from harness import _check
from tempo.core.configs import ExecutionConfig
spec = importlib.util.spec_from_file_location("p", sys.argv[1]); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
kw = eval(f"dict({sys.argv[3]})")
cfg = dataclasses.replace(ExecutionConfig(dev="cpu", backend=sys.argv[2], path=tempfile.mkdtemp() + "/"), **kw)
print(_check(m.program(cfg)))
