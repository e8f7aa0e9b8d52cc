"""accept5a user mistakes (new ones, not in accept3/accept4): each should raise a TempoError subclass whose message names the
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
def n01_assign_to_indexed_placeholder():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((2,), dtypes.float32, domain=(t,))
        hp = h[t - 1]
        hp[0] = RT.zeros((2,))                 # MISTAKE: assigning through an indexed view
@case
def n02_branch_domain_not_in_target():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((2,), dtypes.float32, domain=(t,))
        h[True] = RT.random((2,), domain=(b, t))   # MISTAKE: value varies over b, h has no b
@case
def n03_int_literal_into_float_placeholder():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((), dtypes.float32, domain=(t,))
        h[0] = 0                               # MISTAKE (API 3.5): 0 is int8, not float32
        h[t + 1] = h + 1.0
        h[0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 3}).execute()
@case
def n04_recurrence_without_base_case():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((), dtypes.float32, domain=(t,))
        h[t + 1] = h * 2.0                     # MISTAKE: nothing defines h at t = 0
        h[0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 3}).execute()
@case
def n05_read_before_start():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(t,))
        y = x - x[t - 1]                       # MISTAKE: x[t-1] at t = 0 does not exist
        y[0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 3}).execute()
@case
def n06_index_float_tensor():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.ones((4,))
        y = x.index(0, RT.const(1.5))          # MISTAKE: a float index
        y.sink_udf(lambda v: None)
    c.compile({B: 1, T: 3}).execute()
@case
def n07_bound_not_an_int():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(b, t))
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3.5}).execute()       # MISTAKE: a float bound
@case
def n08_negative_bound():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(b, t))
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: -3}).execute()        # MISTAKE: negative bound
@case
def n09_when_with_int_expression():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((), dtypes.float32, domain=(t,))
        with c.when(t + 1):                    # MISTAKE: not a condition
            h[True] = RT.const(1.0)
@case
def n10_slice_with_step():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(t,))
        y = x[0:T:2]                           # MISTAKE: steps are not supported
        y.sink_udf(lambda v: None)
@case
def n11_open_slice_on_symbolic_dim():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(t,))
        y = x[:t + 1].sum(0)                   # MISTAKE? start must be explicit (API 3.4)
        y[0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 3}).execute()
@case
def n12_same_point_self_reference():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((), dtypes.float32, domain=(t,))
        h[True] = h + 1.0                      # MISTAKE: h needs itself at the same point
        h[0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 3}).execute()
@case
def n13_mutual_same_point_cycle():
    c, b, B, t, T = ctx2()
    with c:
        u = RT.placeholder((), dtypes.float32, domain=(t,))
        v = RT.placeholder((), dtypes.float32, domain=(t,))
        u[True] = v + 1.0
        v[True] = u * 2.0                      # MISTAKE: u and v need each other at t
        u[0:T].sink_udf(lambda x: None)
    c.compile({B: 1, T: 3}).execute()
@case
def n14_placeholder_never_defined():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((2,), dtypes.float32, domain=(t,))
        (h * 2.0)[0:T].sink_udf(lambda v: None)   # MISTAKE: h has no branch
    c.compile({B: 1, T: 3}).execute()
@case
def n15_reversed_temporal_slice():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(t,))
        y = x[5:2]                             # MISTAKE: start > stop
        y.sink_udf(lambda v: None)
@case
def n16_reduce_dim_out_of_range():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2, 3), domain=(t,))
        y = x.sum(3)                           # MISTAKE: x has 2 dims
@case
def n17_reshape_wrong_size():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2, 3), domain=(t,))
        y = x.reshape((4,))                    # MISTAKE: 6 elements into 4
@case
def n18_expand_incompatible():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(t,))
        y = x.expand((3,))                     # MISTAKE: 2 does not expand to 3
@case
def n19_permute_repeated_dim():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2, 3), domain=(t,))
        y = x.permute((0, 0))                  # MISTAKE: dim 0 twice
@case
def n20_unknown_backend():
    cfg = ExecutionConfig(dev="cpu", backend="tensorflow")  # MISTAKE
@case
def n21_symbol_index_past_data():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.const(np.arange(3, dtype=np.float32)).index(0, t)   # 3 rows of data...
        x[0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 5}).execute()          # MISTAKE: ...read at t = 0..4
@case
def n22_stack_of_nothing():
    c, b, B, t, T = ctx2()
    with c:
        y = RT.stack([])                       # MISTAKE: nothing to stack
@case
def n23_softmax_dim_out_of_range():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(t,))
        y = x.softmax(2)                       # MISTAKE: x is 1-D
@case
def n24_domain_with_bound_symbol():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.placeholder((2,), dtypes.float32, domain=(T,))   # MISTAKE: T is a bound
@case
def n25_getitem_too_many_indices():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(t,))
        y = x[t, 0, 1]                         # MISTAKE: x has 1 dim + 1 spatial dim
@case
def n26_matmul_int_float_vector_shapes():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2, 3), domain=(t,))
        y = x @ RT.ones((2,))                  # MISTAKE: (2,3) @ (2,)
@case
def n27_max_of_empty_future():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((), domain=(t,))
        y = x[t + 1:T].max(0)[0]               # MISTAKE: empty at t = T-1
        y[0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 3}).execute()
@case
def n28_where_shape_mismatch():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(t,))
        y = RT.where(x > 0.5, x, RT.ones((2,)))   # MISTAKE: (3,) vs (2,)
@case
def n29_chunk_dim_out_of_range():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((4,), domain=(t,))
        y = x.chunk(2, 1)                      # MISTAKE: no dim 1
@case
def n30_tick_before_compile_args():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(b, t))
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3, "X": 4}).execute()  # MISTAKE: a bound that is not a symbol

run("mistakes5")
