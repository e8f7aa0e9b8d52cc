"""accept7 user mistakes, round 2: a PyTorch user's habits (dim= keywords, numpy functions,
Python ints from bounds, string bound keys, time index on a (b, t) tensor, ops after the
context closed, a udf returning the wrong array type)."""
import sys, warnings
import numpy as np
warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core import index_expr as ie
from tempo.core.dtype import dtypes

import os as _os
sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
from mistakes_run import backend_config, case, context, run  # noqa: E402

CFG = backend_config()


def ctx2():
    return context(CFG, 2)


@case
def q01_time_index_on_first_dim():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
        y = x[t - 1] + x                     # MISTAKE: x[t-1] indexes b, not t
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def q02_sum_dim_keyword():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3, 4), domain=(b, t))
        y = x.sum(dim=0)                     # MISTAKE: torch's keyword (API: dims)
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def q03_softmax_axis_keyword():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3, 4), domain=(b, t))
        y = x.softmax(axis=0)                # MISTAKE: numpy's keyword
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def q04_range_of_a_bound():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
        ys = [x[b, k] for k in range(T)]     # MISTAKE: T is symbolic
        RT.stack(ys)[0:B].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def q05_string_bound_key():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({"B": 2, "T": 5}).execute()    # MISTAKE: names, not the bound symbols


@case
def q06_op_after_context_closed():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
    y = x * 2.0                              # MISTAKE: outside `with ctx:`
    with c:
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def q07_source_udf_returns_list():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.source_udf(lambda: [1.0, 2.0, 3.0], (3,), dtypes.float32, (b, t))  # MISTAKE
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def q08_int_of_symbol_in_shape():
    c, b, B, t, T = ctx2()
    with c:
        z = RT.zeros((int(T), 3))            # MISTAKE: int() of a bound symbol
        z.sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def q09_bound_float_numpy():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: np.float64(5.5)}).execute()   # MISTAKE: non-integral bound


@case
def q10_mean_dim_keyword():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3, 4), domain=(b, t))
        y = x.mean(dim=-1, keepdim=True)     # MISTAKE: torch's keyword
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def q11_window_over_batch_dim_by_slice_of_b():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
        y = x[0:B + 1, t].sum(0)             # MISTAKE: B + 1 rows
        y[0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def q12_grad_of_grad():
    c, b, B, t, T = ctx2()
    with c:
        w = RT.const(np.array([0.5, -1.0], np.float32), requires_grad=True)
        (w * w * w).sum().backward()
        pen = (w.grad * w.grad).sum()
        pen.backward()                        # MISTAKE: Tempo's grads are first-order
    c.compile({B: 1, T: 1}).execute()


@case
def q13_transpose_of_1d_window_then_matmul():
    c, b, B, t, T = ctx2()
    with c:
        k = RT.random((4,), domain=(b, t))
        q = RT.random((4,), domain=(b, t))
        s = k[b, 0:t + 1] @ q.unsqueeze(0)     # MISTAKE: (t+1, 4) @ (1, 4)
        s[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 4}).execute()


@case
def q14_numpy_array_as_index():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((5,), domain=(b, t))
        y = x[b, t, np.array([0, 7])]          # MISTAKE: 7 past the size 5
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


if __name__ == "__main__":
    run("mistakes7b")
