import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
import sys
be = sys.argv[1] if len(sys.argv) > 1 else "torch"
ctx = TempoContext(ExecutionConfig(dev="cpu", backend=be), dim_names=("i", "t"))
(i, I), (t, T) = ctx.variables_and_bounds
log = []
with ctx:
    x = RT.placeholder((2,), dtypes.float32, domain=(i, t))
    x[i, 0] = RT.ones((2,)) * RT.from_symbol(i).cast(dtypes.float32)
    x[i, t + 1] = (x * 0.5).tanh() + RT.from_symbol(t).cast(dtypes.float32)
    x[i, 0:T].sum().sink_with_ts_udf(lambda v, ts: log.append(ts[i]))
exe = ctx.compile({I: 3, T: 4})
print(exe.schedule_text().split("# generated")[0])
n = 0
while exe.tick():
    n += 1
    print("tick", n, log)
import tempo.runtime.codegen_steps as cs
from tempo.schedule.tree import Seq, Loop
tree = exe.schedule.tree
print(type(tree), [type(c).__name__ for c in tree.children] if isinstance(tree, Seq) else None)
print(cs.step_loops(exe.sdg, tree))
for c in tree.children:
    if isinstance(c, Loop):
        print(id(c), c.counter, cs.runs_ops(c.body), cs.runs_ops(c.body, lambda e: cs._is_user(exe.sdg, e)))
