"""accept7 user mistakes (typical day-one mistakes inside whole programs: recurrences,
windows, attention, cells, bounds), not in accept3-6b. Each should raise a TempoError
subclass naming the user's file:line and the user's names (dims named by num_dims=2 and
local names `b, t`, so d0/D0 must not leak either)."""
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
def p01_recurrence_matmul_changes_width():
    c, b, B, t, T = ctx2()
    with c:
        W = RT.random((4, 5))
        h = RT.placeholder((4,), dtypes.float32, domain=(b, t))
        h[b, 0] = RT.zeros((4,))
        h[b, t + 1] = (h @ W).tanh()            # MISTAKE: (5,) into a (4,) state
        h[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def p02_gru_hidden_size_mismatch():
    from tempo.api.nn.rnn import GRUCell
    c, b, B, t, T = ctx2()
    with c:
        cell = GRUCell(3, 4)
        x = RT.random((3,), domain=(b, t))
        h = RT.placeholder((5,), dtypes.float32, domain=(b, t))   # MISTAKE: 5, cell has 4
        h[b, 0] = RT.zeros((5,))
        h[b, t + 1] = cell(x, h)
        h[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def p03_lstm_pair_into_one_placeholder():
    from tempo.api.nn.rnn import LSTMCell
    c, b, B, t, T = ctx2()
    with c:
        cell = LSTMCell(3, 4)
        x = RT.random((3,), domain=(b, t))
        h = RT.placeholder((4,), dtypes.float32, domain=(b, t))
        cst = RT.placeholder((4,), dtypes.float32, domain=(b, t))
        h[b, 0] = RT.zeros((4,)); cst[b, 0] = RT.zeros((4,))
        h[b, t + 1] = cell(x, (h, cst))          # MISTAKE: the (h, c) pair into h
        h[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def p04_window_start_negative():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
        y = x[b, t - 2:t + 1].mean(0)            # MISTAKE: no max(0, t-2)
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def p05_window_end_past_bound():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
        y = x[b, t:t + 3].sum(0)                 # MISTAKE: no min(t+3, T)
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def p06_kv_cache_one_too_far():
    c, b, B, t, T = ctx2()
    with c:
        k = RT.random((4,), domain=(b, t))
        q = RT.random((4,), domain=(b, t))
        s = (k[b, 0:t + 2] * q).sum(-1)          # MISTAKE: 0:t+2 reads the next key
        s[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 4}).execute()


@case
def p07_index_order_swapped():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(b, t))
        y = x[t, b] * 2.0                        # MISTAKE: (t, b) on a (b, t) tensor
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def p08_base_case_on_wrong_dim():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((2,), dtypes.float32, domain=(b, t))
        h[0] = RT.zeros((2,))                    # MISTAKE: b == 0 (meant t == 0)
        h[b, t + 1] = h * 0.5 + 1.0
        h[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def p09_attention_q_at_k_shape():
    c, b, B, t, T = ctx2()
    with c:
        k = RT.random((4,), domain=(b, t))
        q = RT.random((4,), domain=(b, t))
        s = q @ k[b, 0:t + 1]                     # MISTAKE: (4,) @ (t+1, 4): needs k.T
        s[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 4}).execute()


@case
def p10_undefined_bound_in_slice():
    c, b, B, t, T = ctx2()
    N = ie.Symbol("N", is_bound=True, idx=11)
    with c:
        x = RT.random((3,), domain=(b, t))
        y = x[b, 0:N].sum(0)                      # MISTAKE: N is no dim of this context
        y[0:B].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def p11_bound_of_new_dim_missing():
    c = TempoContext(CFG, num_dims=3)
    (b, B), (t, T), (k, K) = c.variables_and_bounds
    with c:
        x = RT.random((3,), domain=(b, t, k))
        x[0:B, 0:T, 0:K].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()            # MISTAKE: K has no value


@case
def p12_int_state_float_update():
    c, b, B, t, T = ctx2()
    with c:
        n = RT.placeholder((), dtypes.int64, domain=(b, t))
        n[b, 0] = RT.const(0, dtype=dtypes.int64)
        n[b, t + 1] = n * 0.5                     # MISTAKE: float into an int64 counter
        n[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def p13_cat_windows_of_different_length():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
        y = RT.cat(x[b, 0:t + 1], x[b, 0:T], dim=1)   # MISTAKE: rows t+1 vs T along dim 1
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def p14_window_softmax_wrong_dim_then_sum_mismatch():
    c, b, B, t, T = ctx2()
    with c:
        k = RT.random((4,), domain=(b, t))
        q = RT.random((4,), domain=(b, t))
        v = RT.random((6,), domain=(b, t))
        p = (k[b, 0:t + 1] * q).sum(-1).softmax()
        o = p * v[b, 0:t + 1]                         # MISTAKE: (t+1,) * (t+1, 6): needs unsqueeze
        o[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 4}).execute()


@case
def p15_read_other_branch_future_in_forward_rec():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((2,), dtypes.float32, domain=(b, t))
        h[b, 0] = RT.ones((2,))
        h[True] = h[b, t - 1] + h[b, t + 1]           # MISTAKE: reads its own future
        h[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 4}).execute()


@case
def p16_embedding_of_float_state():
    from tempo.api.nn import Embedding
    c, b, B, t, T = ctx2()
    with c:
        emb = Embedding(10, 4)
        tok = RT.placeholder((), dtypes.default_int, domain=(b, t))
        tok[b, 0] = RT.const(1, dtype=dtypes.default_int)
        logits = emb(tok) @ RT.random((4, 10))
        tok[b, t + 1] = logits.softmax()               # MISTAKE: probabilities, not argmax
        tok[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 4}).execute()


@case
def p17_sink_of_unbounded_slice_with_symbolic_sink_shape():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
        x[0:B, 0:T + 1].sink_udf(lambda v: None)        # MISTAKE: T + 1 points of T
    c.compile({B: 2, T: 3}).execute()


@case
def p18_step_outside_time_in_shift():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((2,), dtypes.float32, domain=(b, t))
        h[b, 0] = RT.zeros((2,))
        h[b, t + 1] = h[b, t - 1] + 1.0              # MISTAKE: t-1 under the shift: t-2, no base at 1
        h[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 1, T: 4}).execute()


if __name__ == "__main__":
    run("mistakes7")
