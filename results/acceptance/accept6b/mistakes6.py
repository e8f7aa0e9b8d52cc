"""accept6b user mistakes (new ones, not in accept3/4/5a): each should raise a TempoError
subclass whose message names the user's file:line and uses the user's names."""
import sys, warnings
import numpy as np
warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
import tempo.api.recurrent_tensor as tpo

BE = sys.argv[1] if len(sys.argv) > 1 else "torch"
CFG = ExecutionConfig(dev="cpu", backend=BE)
import os as _os
sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
from mistakes_run import case, run  # noqa: E402


def ctx2():
    c = TempoContext(CFG, dim_names=("b", "t"))
    (b, B), (t, T) = c.variables_and_bounds
    return c, b, B, t, T


@case
def k01_gather_index_float():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3, 4), domain=(t,))
        y = x.gather(1, RT.const(np.array([[0.0, 1.0]] * 3, np.float32)))  # MISTAKE: float index
        y.sink_udf(lambda v: None)
    c.compile({B: 1, T: 2}).execute()


@case
def k02_pad_too_many_dims():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(t,))
        y = x.pad(((1, 1), (2, 2)))            # MISTAKE: 2 paddings for a 1-D tensor
        y.sink_udf(lambda v: None)
    c.compile({B: 1, T: 2}).execute()


@case
def k03_conv1d_channel_mismatch():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2, 8), domain=(t,))
        w = RT.random((4, 3, 3))                # MISTAKE: 3 in-channels for a 2-channel input
        tpo.conv1d(x, w).sink_udf(lambda v: None)
    c.compile({B: 1, T: 2}).execute()


@case
def k04_backward_of_int_loss():
    c, b, B, t, T = ctx2()
    with c:
        w = RT.const(np.array([1, 2, 3], np.int64), requires_grad=True)  # MISTAKE: int leaf
        (w * 2).sum().backward()
    c.compile({B: 1, T: 2}).execute()


@case
def k05_cat_of_different_domains_dims():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(t,))
        y = RT.cat(x, x.unsqueeze(0), dim=0)    # MISTAKE: ranks 1 and 2
        y.sink_udf(lambda v: None)
    c.compile({B: 1, T: 2}).execute()


@case
def k06_index_select_2d_index():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((5,), domain=(t,))
        y = x.index(0, RT.const(np.array([[0, 1], [2, 3]])))  # MISTAKE: a 2-D index
        y.sink_udf(lambda v: None)
    c.compile({B: 1, T: 2}).execute()


@case
def k07_split_more_than_size():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(t,))
        parts = x.split(0, 4)                   # MISTAKE: 4 equal parts of 3
        parts[0].sink_udf(lambda v: None)
    c.compile({B: 1, T: 2}).execute()


@case
def k08_sort_dim_out_of_range():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3, 2), domain=(t,))
        x.sort(2)[0].sink_udf(lambda v: None)   # MISTAKE: dim 2 of a 2-D tensor
    c.compile({B: 1, T: 2}).execute()


@case
def k09_sink_of_other_context_tensor():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(t,))
    c2 = TempoContext(CFG, dim_names=("b", "t"))
    with c2:
        (x * 2.0).sink_udf(lambda v: None)      # MISTAKE: x belongs to the first context
    c2.compile({c2.upper_bounds[0]: 1, c2.upper_bounds[1]: 2}).execute()


@case
def k10_bool_bound_not_over_dim():
    c, b, B, t, T = ctx2()
    with c:
        done = RT.random((), domain=(b,)) > 0.5  # over b, not t
        x = RT.random((), domain=(b, t))
        x.sink_udf(lambda v: None)
    c.compile({B: 2, T: done}).execute()        # MISTAKE: T ended by a tensor without t


@case
def k11_discounted_cum_sum_int_gamma_dim():
    c, b, B, t, T = ctx2()
    with c:
        r = RT.random((), domain=(b, t))
        g = r[b, 0:T].discounted_cum_sum(0.9, dim=1)  # MISTAKE: the slice is dim 0 of a 1-D
        g.sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def k12_window_both_ends_reversed():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((), domain=(t,))
        w = x[t + 1:ie.max(0, t - 2)].sum(0)    # MISTAKE: start after stop
        w.sink_udf(lambda v: None)
    c.compile({B: 1, T: 4}).execute()


@case
def k13_random_int_low_above_high():
    c, b, B, t, T = ctx2()
    with c:
        r = RT.random_int(low=5, high=2, domain=(t,))  # MISTAKE: empty range
        r.sink_udf(lambda v: None)
    c.compile({B: 1, T: 2}).execute()


@case
def k14_execute_until_barrier_typo():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((), domain=(t,))
        x.sink_udf(lambda v: None)
        RT.barrier("phase1")
    e = c.compile({B: 1, T: 2})
    e.execute_until_barrier("phase_1")         # MISTAKE: the barrier is called phase1


@case
def k15_matmul_broadcast_batch_mismatch():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2, 3, 4), domain=(t,))
        y = RT.random((3, 4, 5))
        (x @ y).sink_udf(lambda v: None)        # MISTAKE: batch dims 2 and 3
    c.compile({B: 1, T: 2}).execute()


@case
def k16_one_hot_of_float():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((), domain=(t,)) * 3.0
        x.one_hot(3).sink_udf(lambda v: None)   # MISTAKE: a float class index
    c.compile({B: 1, T: 2}).execute()


@case
def k17_clip_bounds_shape():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((4,), domain=(t,))
        x.clip(RT.zeros((3,)), 1.0).sink_udf(lambda v: None)  # MISTAKE: lb of shape (3,)
    c.compile({B: 1, T: 2}).execute()


@case
def k18_requires_grad_leaf_then_assign_grad_path():
    c, b, B, t, T = ctx2()
    with c:
        w = RT.const(np.float32(0.5), requires_grad=True)
        h = RT.placeholder((), dtypes.float32, domain=(t,), requires_grad=True)
        h[0] = w * 1.0
        h[t + 1] = h * w
        h[0:T].sum(0).backward()                # MISTAKE: h declared requires_grad is a leaf
    c.compile({B: 1, T: 3}).execute()


if __name__ == "__main__":
    run("mistakes6")
