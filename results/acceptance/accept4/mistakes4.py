"""accept4 user mistakes: each should raise a TempoError subclass whose message names the
user's file:line and uses the user's names (no T0.0 / op#k / isl / d0 when dims are named)."""
import re, sys, traceback, warnings
import numpy as np
warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoError

BE = sys.argv[1] if len(sys.argv) > 1 else "torch"
CFG = ExecutionConfig(dev="cpu", backend=BE)
import os as _os
sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
from mistakes_run import case, run  # noqa: E402 (the shared runner, ../mistakes_run.py)

def ctx2():
    c = TempoContext(CFG, dim_names=("b", "t"))
    (b, B), (t, T) = c.variables_and_bounds
    return c, b, B, t, T

@case
def m01_assign_to_non_placeholder():
    c, b, B, t, T = ctx2()
    with c:
        y = RT.ones((3,)) * 2.0
        y[t < 2] = RT.zeros((3,))              # MISTAKE: y is not a placeholder
@case
def m02_branch_shape_mismatch():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((3,), dtypes.float32, domain=(t,))
        h[0] = RT.zeros((4,))                  # MISTAKE: (4,) into (3,)
@case
def m03_missing_bound():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(b, t))
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2})                          # MISTAKE: no value for T
@case
def m04_future_read_past_end():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(t,))
        y = x[t + 1] - x                       # MISTAKE: x[t+1] at t = T-1 does not exist
        y[0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 4}).execute()
@case
def m05_sink_callback_raises():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(t,))
        x.sink_udf(lambda v: 1 / 0)            # MISTAKE: the user's callback fails
    c.compile({B: 2, T: 4}).execute()
@case
def m06_const_shape_with_array():
    c, b, B, t, T = ctx2()
    with c:
        RT.const(np.ones(3), shape=(3,))       # MISTAKE: shape with an ndarray
@case
def m07_reshape_two_minus_ones():
    c, b, B, t, T = ctx2()
    with c:
        RT.ones((2, 6)).reshape((-1, -1))      # MISTAKE: two -1
@case
def m08_transpose_dim_out_of_range():
    c, b, B, t, T = ctx2()
    with c:
        RT.ones((2, 6)).transpose(0, 5)        # MISTAKE: dim 5
@case
def m09_cat_shape_mismatch():
    c, b, B, t, T = ctx2()
    with c:
        RT.cat(RT.ones((2, 3)), RT.ones((2, 4)), dim=0)   # MISTAKE: dim 1 differs
@case
def m10_backward_non_scalar():
    c, b, B, t, T = ctx2()
    with c:
        w = RT.const(np.ones(3, np.float32), requires_grad=True)
        (w * 2.0).backward()                   # MISTAKE: loss of shape (3,)
@case
def m11_symbol_from_other_context():
    c, b, B, t, T = ctx2()
    c2 = TempoContext(CFG, dim_names=("i",))
    ((i, I),) = c2.variables_and_bounds
    with c:
        x = RT.random((2,), domain=(t,))
        y = x[i]                               # MISTAKE: i belongs to another context
        y.sink_udf(lambda v: None)
    c.compile({B: 1, T: 3}).execute()
@case
def m12_map_udf_wrong_dtype():
    c, b, B, t, T = ctx2()
    import torch
    with c:
        x = RT.random((2,), domain=(t,))
        y = x.map_udf(lambda v: (v * 10).long() if hasattr(v, "long") else (v * 10).astype(np.int64))   # MISTAKE: returns int64, declared float
        y[0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 3}).execute()
@case
def m13_split_not_dividing():
    c, b, B, t, T = ctx2()
    with c:
        RT.ones((5,)).chunk(2)                 # MISTAKE: 5 not divisible by 2
@case
def m14_categorical_float_action():
    from tempo.api.distributions import Categorical
    c, b, B, t, T = ctx2()
    with c:
        d = Categorical(logits=RT.const(np.zeros(4, np.float32)))
        d.log_prob(RT.const(1.5))              # MISTAKE: float action
@case
def m15_get_point_of_dropped_tensor():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(t,)) * 3.0
        y = (x + 1.0)[0:T].sum(0)
        y.sink_udf(lambda v: None)
    exe = c.compile({B: 1, T: 3}); exe.execute()
    exe.get_spatial_tensor_torch(x.tensor_id, (1,))   # MISTAKE (maybe): x was freed by GC under the default config
@case
def m16_zero_bound():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(t,))
        x[0:T].sum(0).sink_udf(lambda v: None)
    c.compile({B: 1, T: 0}).execute()          # MISTAKE: T = 0
@case
def m17_optimizer_on_non_param():
    from tempo.api.optim.optim import Adam
    c, b, B, t, T = ctx2()
    with c:
        w = RT.const(np.ones(3, np.float32))   # MISTAKE: not requires_grad, not a placeholder param
        Adam([w], [], lr=0.1).step()
@case
def m18_index_spatial_out_of_range():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.ones((3,))
        x[5].sink_udf(lambda v: None)          # MISTAKE: spatial index 5 of size 3
    c.compile({B: 1, T: 1}).execute()
@case
def m19_matmul_shape():
    c, b, B, t, T = ctx2()
    with c:
        (RT.ones((2, 3)) @ RT.ones((4, 2))).sink_udf(lambda v: None)   # MISTAKE: 3 vs 4
@case
def m20_when_with_tensor_condition():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((), domain=(t,))
        h = RT.placeholder((), dtypes.float32, domain=(t,))
        with c.when(x > 0.5):                  # MISTAKE: when takes an index expression, not a tensor
            h[True] = x
@case
def m21_env_bad_action_domain():
    from tempo.api.rl.env.env import Env
    c, b, B, t, T = ctx2()
    with c:
        env = Env.make_env("gym.CartPole-v1")
        o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(b, t))
        o[b, 0] = env.reset(domain=(b,))
        a = RT.random_int(0, 2, domain=(t,)).cast(env.action_dtype)
        o[b, t + 1], r, te, tr = env.step(a)   # MISTAKE: actions over (t) only: which env?
        r[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()

run("mistakes4")
