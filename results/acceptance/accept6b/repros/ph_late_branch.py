"""A placeholder p read (by c) before a later branch of another placeholder h that p reads
makes h require grad: backward() of a loss over c raised GradientError 'no tensor it is
computed from was made with requires_grad=True' (API 7.11: gradients flow through
recurrences, whatever the order the branches were assigned in)."""
import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
ctx = TempoContext(ExecutionConfig(dev="cpu", backend="numpy"), dim_names=("t",))
((t, T),) = ctx.variables_and_bounds
out = {}
with ctx:
    s = RT.const(np.float32(0.7), requires_grad=True)
    h = RT.placeholder((), dtypes.float32, domain=(t,))
    p = h * 2.0                      # read before h has any branch
    h[0] = s * 1.0
    h[t + 1] = h * s
    loss = p[0:T].sum(0)
    loss.backward()
    print("s.grad", s.grad)
    s.grad.sink_udf(lambda v: out.setdefault("g", float(v)))
ctx.compile({T: 4}).execute()
print(out["g"], "want", 2 * (1 + 2 * 0.7 + 3 * 0.49 + 4 * 0.343))
