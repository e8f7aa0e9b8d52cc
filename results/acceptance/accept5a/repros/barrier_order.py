"""execute_until_barrier runs a sink recorded after the barrier and skips one recorded before
it (test_cfg; the default config happens to order them right). Expected log after
execute_until_barrier("mid"): ['before b=0', 'before b=1'] (the per-(b,t) many-sink that needs
x[0:B, t] included), never 'after'."""
import dataclasses, numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend="torch", path="")
ctx = TempoContext(cfg, dim_names=("b", "t"))
(b, B), (t, T) = ctx.variables_and_bounds
log = []
with ctx:
    x = RT.from_symbol(b).cast(dtypes.float32) + RT.from_symbol(t).cast(dtypes.float32)
    tot_t = x[0:B, t].sum(0)                           # over (t,): needs every b
    RT.sink_many_with_ts_udf([x, tot_t], lambda vs, ts: log.append(f"before b={ts[b]}"))
    RT.barrier("mid")
    (x * 3.0)[0:B, 0:T].sum().sink_udf(lambda v: log.append("after"))
exe = ctx.compile({B: 2, T: 2})
exe.execute_until_barrier("mid")
print(log)
