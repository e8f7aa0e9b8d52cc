import sys, dataclasses
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
kw = dict(a.split("=") for a in sys.argv[1:])
kw = {k: v == "1" for k, v in kw.items()}
cfg = dataclasses.replace(ExecutionConfig(dev="cpu", backend="torch"), **kw)
c = TempoContext(cfg, dim_names=("t",))
((t, T),) = c.variables_and_bounds
with c:
    u = RT.placeholder((), dtypes.float32, domain=(t,))
    v = RT.placeholder((), dtypes.float32, domain=(t,))
    u[True] = v + 1.0
    v[True] = u * 2.0
    u[0:T].sink_udf(lambda x: print(x))
e = c.compile({T: 3})
print(e.schedule_text().split("# generated")[0])
e.execute()
