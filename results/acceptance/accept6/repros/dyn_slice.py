"""A slice to a dynamic bound: x[0:T] with {T: (8, done)} (API §7.10). x[0:T].sum() works;
x[0:T].discounted_cum_sum(g) (keeps t), x[0:T].cumsum(0) raised KeyError: T at compile
(bind_bounds evaluated a shape (T,) without T). Expected, done at t = 3 (points 0..3):
sum 6, future sums [6, 6, 5, 3], cumsum [0, 1, 3, 6]."""
import sys
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

be = sys.argv[1] if len(sys.argv) > 1 else "torch"
ctx = TempoContext(ExecutionConfig(dev="cpu", backend=be), dim_names=("t",))
((t, T),) = ctx.variables_and_bounds
got, fut, cs = [], [], []
with ctx:
    x = RT.from_symbol(t).cast(dtypes.float32)
    done = x >= 3.0
    x[0:T].sum().sink_udf(lambda v: got.append(float(v)))
    x[0:T].discounted_cum_sum(1.0, dim=0).sink_udf(lambda v: fut.append(float(v)))
    x[0:T].cumsum(0).sink_udf(lambda v: cs.append(v.tolist()))
ctx.compile({T: (8, done)}).execute()
print(got, fut, cs)
assert got == [6.0] and fut == [6.0, 6.0, 5.0, 3.0] and cs == [[0.0, 1.0, 3.0, 6.0]], (got, fut, cs)
