import sys, dataclasses
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
be, which = sys.argv[1], sys.argv[2]
cfg = ExecutionConfig(dev="cpu", backend=be)
if which == "test": cfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=be)
if which == "off": cfg = dataclasses.replace(cfg, enable_vectorization=False, enable_fusion=False, enable_statifying_incrementalization=False)
c = TempoContext(cfg, dim_names=("t",))
((t, T),) = c.variables_and_bounds
with c:
    x = RT.random((), domain=(t,))
    y = x[t + 1:T].max(0)[0]
    y[0:T].sink_udf(lambda v: None)
c.compile({T: 3}).execute()
