import sys, numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.dtype import dtypes
from tempo.core.configs import ExecutionConfig
mode = sys.argv[1]
ctx = TempoContext(ExecutionConfig(dev="cpu", backend="torch"), dim_names=("i", "t"))
(i, I), (t, T) = ctx.variables_and_bounds
log = []
with ctx:
    if mode == "t_only":
        done = RT.from_symbol(t) >= 2
    elif mode == "ti":
        done = (RT.from_symbol(t) - RT.from_symbol(i)) >= 2
    elif mode == "data":
        x = RT.random((), domain=(i, t))
        done = (x * 0.0 + RT.from_symbol(t).cast(dtypes.float32) - RT.from_symbol(i).cast(dtypes.float32)) >= 2.0
    acc = RT.placeholder((), dtypes.float32, domain=(i, t))
    acc[i, 0] = RT.from_symbol(i).cast(dtypes.float32)
    acc[i, t + 1] = acc * 2.0 + 1.0
    acc.sink_with_ts_udf(lambda v, ts: log.append((ts[i], ts[t])))
exe = ctx.compile({I: 3, T: done})
print(exe.schedule_text())
exe.execute()
print(mode, len(log), log[:8])
