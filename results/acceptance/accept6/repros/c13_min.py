"""Minimal c13 (PPO epochs) repro: a Linear policy over (i, e) read at (i, 0) by a rollout
over (i, b, t) (Categorical sample), the samples re-read as a batch act[i, 0:B, 0:T] by the
clipped-surrogate-like update at (i, e) with Adam. With vectorisation on (b, t batched into
the rollout's ops over (i)) the program goes to isl's scheduler, and isl's AST generator,
given the scheduler's schedule *tree*, emitted the batch read (reshape of act, `A = ...`)
before the sample op it reads for i = 1, against the tree's own flat map (which respects
every dependence): `BackendError ... reshape lp = ...: (1,)` (a KeyError). Fixed by generating
the AST from the flat map with separated loops (tempo/schedule/scheduler.py `flattened`).
usage: PYTHONPATH=. python results/acceptance/accept6/repros/c13_min.py [torch|numpy|jax] [novec]
Expected (torch): losses [[-1, -1.0168822], [-1, -1.033908]], the same with novec."""
import sys
import numpy as np
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.api.nn import Linear
from tempo.api.distributions import Categorical
from tempo.api.optim.optim import Adam
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

be = sys.argv[1] if len(sys.argv) > 1 else "torch"
cfg = ExecutionConfig(dev="cpu", backend=be, enable_vectorization="novec" not in sys.argv)
ctx = TempoContext(cfg, dim_names=("i", "e", "b", "t"))
(i, I), (e, E), (b, B), (t, T) = ctx.variables_and_bounds
W = np.array([[0.5, -0.5], [0.1, 0.2]], np.float32)
s = {}
with ctx:
    pi = Linear(2, 2, domain=(i, e), w_init_fun=lambda shape, dtype, domain: RT.const(W))
    f = lambda v: RT.from_symbol(v).cast(dtypes.float32)  # noqa: E731
    obs = RT.const(np.array([1.0, -1.0], np.float32)) * (f(b) + f(t) + f(i))
    dist = Categorical(logits=obs @ pi.w[i, 0].T + pi.b[i, 0])
    act = dist.sample()
    old_lp = dist.log_prob(act).detach()
    O = obs[i, 0:B, 0:T]
    A = act[i, 0:B, 0:T].cast(dtypes.int64)
    lp = (pi(O).softmax(-1).ln() * A.one_hot(2).cast(dtypes.float32)).sum(-1)
    loss = -(lp - old_lp[i, 0:B, 0:T]).exp().mean()
    opt = Adam(pi.parameters, [], lr=0.05)
    loss.backward()
    opt.step()
    loss[0:I, 0:E].sink_udf(lambda v: s.__setitem__("loss", np.asarray(v)))
ctx.compile({I: 2, E: 2, B: 2, T: 2}).execute()
print(s["loss"])
